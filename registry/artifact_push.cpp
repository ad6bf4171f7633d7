// An artifact's push as one coroutine on an io_context of its own: the
// subject resolved, the blobs uploaded, the manifest put, the referrers
// kept.
#include "registry/artifact_push.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <optional>

#include "policy/image/image_ref.h"
#include "registry/authorizer.h"
#include "registry/manifest.h"
#include "registry/registry_endpoints.h"
#include "registry/registry_session.h"
#include "types/quote.h"

namespace cudagate {

namespace net = boost::asio;
namespace http = boost::beast::http;

namespace {

constexpr std::size_t kMaxAnswerBytes = std::size_t{64} << 10;

// One blob, unless the registry has it already.
net::awaitable<std::optional<Error>> push_blob(RegistrySession& session, std::string_view digest,
                                               std::string_view content) {
  const std::string blobs = "/v2/" + session.repository() + "/blobs/";
  RegistryCall head;
  head.method = http::verb::head;
  head.target = blobs + std::string(digest);
  auto found = co_await session.call(std::move(head), kMaxAnswerBytes);
  if (!found) co_return found.error();
  if (found->status == 200) co_return std::nullopt;
  if (found->status != 404) co_return session.refused(*found, "blob HEAD " + std::string(digest));

  RegistryCall start;
  start.method = http::verb::post;
  start.target = blobs + "uploads/";
  auto started = co_await session.call(std::move(start), kMaxAnswerBytes);
  if (!started) co_return started.error();
  if (started->status != 202 || started->location.empty()) {
    co_return session.refused(*started, "blob upload POST");
  }
  RegistryCall put;
  put.method = http::verb::put;
  put.target = started->location;
  put.target += put.target.find('?') == std::string::npos ? '?' : '&';
  put.target += "digest=" + percent_encoded(digest);
  put.content_type = "application/octet-stream";
  put.body = std::string(content);
  auto stored = co_await session.call(std::move(put), kMaxAnswerBytes);
  if (!stored) co_return stored.error();
  if (stored->status != 201) co_return session.refused(*stored, "blob PUT " + std::string(digest));
  co_return std::nullopt;
}

// The referrers tag's index with `artifact` listed.
net::awaitable<std::optional<Error>> update_referrers_tag(RegistrySession& session,
                                                          const std::string& tag,
                                                          const Descriptor& artifact) {
  const std::string target = "/v2/" + session.repository() + "/manifests/" + tag;
  RegistryCall get;
  get.target = target;
  get.accept = std::string(kOciIndex);
  auto current = co_await session.call(std::move(get), RegistrySession::kMaxManifestBytes);
  if (!current) co_return current.error();
  std::string existing;
  if (current->status == 200) {
    existing = std::move(current->body);
  } else if (current->status != 404) {
    co_return session.refused(*current, "referrers tag " + tag);
  }
  auto index = referrers_index_with(existing, artifact);
  if (!index) co_return index.error().within(session.where() + ":" + tag);
  RegistryCall put;
  put.method = http::verb::put;
  put.target = target;
  put.content_type = std::string(kOciIndex);
  put.body = std::move(*index);
  auto stored = co_await session.call(std::move(put), kMaxAnswerBytes);
  if (!stored) co_return stored.error();
  if (stored->status != 201) co_return session.refused(*stored, "referrers tag PUT " + tag);
  co_return std::nullopt;
}

net::awaitable<Expected<AttachedArtifact>> attach(const RegistrySettings& settings,
                                                  const std::string& reference,
                                                  const Platform& platform,
                                                  const ArtifactBuilder& build) {
  auto ref = ImageRef::parse(reference);
  if (!ref) co_return ref.error().within("--attach " + quote(reference));
  auto access = registry_access(settings);
  if (!access) co_return access.error();
  const Credentials* credentials =
      access->credentials ? access->credentials->find(ref->registry) : nullptr;
  RegistrySession session(co_await net::this_coro::executor, origin_endpoint(*ref, settings),
                          ref->repository, "pull,push", credentials, access->tls);

  AttachedArtifact out;
  auto subject = co_await session.resolve_manifest(*ref, platform);
  if (!subject) co_return subject.error();
  out.subject = subject->descriptor;
  auto content = build(out.subject);
  if (!content) co_return content.error();
  const ArtifactManifest manifest = artifact_manifest(*content, out.subject);
  out.artifact = manifest.descriptor;

  if (auto error = co_await push_blob(session, kOciEmptyDigest, kOciEmptyContent)) {
    co_return *error;
  }
  const std::string layer_digest = sha256_digest(content->layer);
  if (auto error = co_await push_blob(session, layer_digest, content->layer)) {
    co_return *error;
  }
  RegistryCall put;
  put.method = http::verb::put;
  put.target = "/v2/" + ref->repository + "/manifests/" + manifest.descriptor.digest;
  put.content_type = std::string(kOciManifest);
  put.body = manifest.body;
  auto stored = co_await session.call(std::move(put), kMaxAnswerBytes);
  if (!stored) co_return stored.error();
  if (stored->status != 201) {
    co_return session.refused(*stored, "manifest PUT " + manifest.descriptor.digest);
  }

  bool listed_by_registry = false;
  if (!stored->oci_subject.empty()) {
    RegistryCall referrers;
    referrers.target = "/v2/" + ref->repository + "/referrers/" + out.subject.digest;
    referrers.accept = std::string(kOciIndex);
    auto answer = co_await session.call(std::move(referrers), RegistrySession::kMaxManifestBytes);
    if (!answer) co_return answer.error();
    listed_by_registry = answer->status == 200;
  }
  if (!listed_by_registry) {
    out.referrers_tag = referrers_tag(out.subject.digest);
    if (auto error = co_await update_referrers_tag(session, out.referrers_tag, out.artifact)) {
      co_return *error;
    }
  }
  co_return out;
}

}  // namespace

Expected<AttachedArtifact> attach_artifact(const RegistrySettings& settings,
                                           std::string_view reference, std::string_view platform,
                                           const ArtifactBuilder& build) {
  auto wanted = Platform::parse(platform.empty() ? "linux/amd64" : platform);
  if (!wanted) return wanted.error().within("--platform");
  net::io_context ioc(1);
  const std::string named(reference);
  std::optional<Expected<AttachedArtifact>> result;
  const std::string where = "--attach " + quote(reference);
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        result.emplace(co_await attach(settings, named, *wanted, build));
      },
      [&result, &where](const std::exception_ptr& error) {
        if (!error) return;
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          result.emplace(Error{where, std::string("internal error: ") + e.what()});
        } catch (...) {
          result.emplace(Error{where, "internal error"});
        }
      });
  ioc.run();
  if (!result) return Error{where, "the push did not finish"};
  return std::move(*result);
}

}  // namespace cudagate
