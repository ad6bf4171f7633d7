// Folding ResourceClaim and ResourceClaimTemplate lists and watch events
// into a claim catalog, a coalesced batch at a time.
#include "server/live_claims.h"

#include <boost/asio/post.hpp>
#include <string>
#include <utility>

namespace cudagate {
namespace {

std::string key_of(const std::string& namespace_, const std::string& name) {
  return namespace_ + "/" + name;
}

std::size_t index_of(LiveClaims::Source source) {
  return source == LiveClaims::Source::templates ? 0 : 1;
}

}  // namespace

LiveClaims::LiveClaims(const boost::asio::any_io_executor& executor,
                       std::chrono::milliseconds coalesce, Publish publish)
    : executor_(executor), coalesce_(coalesce), publish_(std::move(publish)), timer_(executor) {}

void LiveClaims::add_page(Source source, std::vector<ClaimSpec> claims, bool first, bool last) {
  const std::lock_guard lock(mutex_);
  Pending& pending = pending_[index_of(source)];
  if (first) pending = Pending{};
  for (ClaimSpec& claim : claims) pending.list.push_back(std::move(claim));
  if (!last) return;
  pending.list_done = true;
  schedule();
}

void LiveClaims::apply(Source source, std::vector<kube::ClaimChange> changes) {
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
    for (kube::ClaimChange& change : taken[i].changes) {
      const std::string key = key_of(change.namespace_, change.name);
      if (change.object) {
        known.insert_or_assign(key, std::move(*change.object));
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
