// Folding ResourceClaim and ResourceClaimTemplate lists and watch events
// into a claim catalog, a coalesced batch at a time.
#include "server/live_claims.h"

#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <optional>
#include <string>
#include <utility>

#include "kube/cluster_workloads.h"

namespace cudagate {
namespace {

std::string key_of(const std::string& namespace_, const std::string& name) {
  return namespace_ + "/" + name;
}

std::size_t index_of(LiveClaims::Source source) {
  return source == LiveClaims::Source::templates ? 0 : 1;
}

// The claim of a watched object, or nullopt when it is made for a pod or
// cannot be read (then logged).
std::optional<ClaimSpec> watched_claim(const nlohmann::json& object) {
  auto claim = kube::read_claim_object(object);
  if (!claim) {
    spdlog::warn("API server: claim left out: {}", claim.error().str());
    return std::nullopt;
  }
  return std::move(*claim);
}

}  // namespace

LiveClaims::LiveClaims(const boost::asio::any_io_executor& executor,
                       std::chrono::milliseconds coalesce, Publish publish)
    : executor_(executor), coalesce_(coalesce), publish_(std::move(publish)), timer_(executor) {}

void LiveClaims::add_page(Source source, const std::vector<nlohmann::json>& items, bool first,
                          bool last) {
  std::vector<ClaimSpec> claims;
  for (const nlohmann::json& item : items) {
    if (auto claim = watched_claim(item)) claims.push_back(std::move(*claim));
  }
  const std::lock_guard lock(mutex_);
  Pending& pending = pending_[index_of(source)];
  if (first) pending = Pending{};
  for (ClaimSpec& claim : claims) pending.list.push_back(std::move(claim));
  if (!last) return;
  pending.list_done = true;
  schedule();
}

void LiveClaims::apply(Source source, std::vector<kube::ObjectChange> changes) {
  const std::lock_guard lock(mutex_);
  Pending& pending = pending_[index_of(source)];
  for (auto& change : changes) pending.changes.push_back(std::move(change));
  schedule();
}

void LiveClaims::stop() {
  {
    const std::lock_guard lock(mutex_);
    stopped_ = true;
  }
  boost::asio::post(executor_, [this] { timer_.cancel(); });
}

// Under mutex_.
void LiveClaims::schedule() {
  if (scheduled_ || stopped_) return;
  scheduled_ = true;
  boost::asio::post(executor_, [this] {
    timer_.expires_after(coalesce_);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) rebuild();
    });
  });
}

void LiveClaims::rebuild() {
  Pending taken[2];
  {
    const std::lock_guard lock(mutex_);
    scheduled_ = false;
    if (stopped_) return;
    for (std::size_t i = 0; i < 2; ++i) {
      if (pending_[i].list_done) {
        taken[i] = std::exchange(pending_[i], Pending{});
      } else {
        taken[i].changes = std::exchange(pending_[i].changes, {});
      }
    }
  }
  Update update;
  for (std::size_t i = 0; i < 2; ++i) {
    auto& known = known_[i];
    if (taken[i].list_done) {
      known.clear();
      for (ClaimSpec& claim : taken[i].list) {
        std::string key = key_of(claim.resource.namespace_, claim.resource.name);
        known.insert_or_assign(std::move(key), std::move(claim));
      }
      (i == 0 ? update.templates_listed : update.claims_listed) = true;
    }
    for (kube::ObjectChange& change : taken[i].changes) {
      const std::string key = key_of(change.namespace_, change.name);
      std::optional<ClaimSpec> claim;
      if (change.kind == kube::ObjectChange::Kind::upsert) claim = watched_claim(change.object);
      if (claim) {
        known.insert_or_assign(key, std::move(*claim));
      } else {
        known.erase(key);
      }
    }
  }
  auto catalog = std::make_shared<ClaimCatalog>();
  for (const auto& known : known_) {
    for (const auto& [key, claim] : known) catalog->add(claim);
  }
  update.catalog = std::move(catalog);
  publish_(update);
}

}  // namespace cudagate
