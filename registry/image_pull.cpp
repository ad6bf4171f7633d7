// A pull as one coroutine on an io_context of its own: manifest, config,
// then each layer streamed through its digest to the visitor.
#include "registry/image_pull.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>

#include "policy/image/image_ref.h"
#include "registry/blob_digest.h"
#include "registry/image_layers.h"
#include "registry/manifest.h"
#include "registry/registry_endpoints.h"
#include "registry/registry_session.h"
#include "types/quote.h"

namespace cudagate {

namespace net = boost::asio;

namespace {

constexpr std::size_t kMaxConfigBytes = std::size_t{8} << 20;

net::awaitable<Expected<PulledImage>> pull(const RegistrySettings& settings,
                                           const std::string& reference, const Platform& platform,
                                           LayerVisitor& visitor) {
  auto ref = ImageRef::parse(reference);
  if (!ref) co_return ref.error().within("image " + quote(reference));
  auto access = registry_access(settings);
  if (!access) co_return access.error();
  const Credentials* credentials =
      access->credentials ? access->credentials->find(ref->registry) : nullptr;
  const auto executor = co_await net::this_coro::executor;

  // The manifest: from the mirror, else from the origin.
  std::optional<RegistrySession> session;
  std::optional<ResolvedManifest> manifest;
  std::string failures;
  for (const RegistryEndpoint& endpoint : read_endpoints(*ref, settings)) {
    session.emplace(executor, endpoint, ref->repository, "pull", credentials, access->tls);
    auto resolved = co_await session->resolve_manifest(*ref, platform);
    if (resolved) {
      manifest = std::move(*resolved);
      break;
    }
    failures += failures.empty() ? "" : "; ";
    failures += resolved.error().str();
  }
  if (!manifest) co_return Error{"image " + quote(reference), failures};

  PulledImage out;
  out.reference = reference;
  out.manifest = manifest->descriptor;
  auto layers = parse_image_layers(manifest->body);
  if (!layers) co_return layers.error().within(session->where() + "@" + out.manifest.digest);

  // The config, for its platform.
  {
    RegistryCall get;
    get.target = "/v2/" + ref->repository + "/blobs/" + layers->config.digest;
    const std::string what = "config " + session->where() + "@" + layers->config.digest;
    auto reply = co_await session->call(std::move(get), kMaxConfigBytes);
    if (!reply) co_return reply.error();
    if (reply->status != 200) co_return session->refused(*reply, what);
    if (!digest_matches(layers->config.digest, reply->body)) {
      co_return Error{what, "content does not match its digest (it hashes to " +
                                sha256_digest(reply->body) + ")"};
    }
    out.platform = platform_of_config(reply->body);
  }

  BlobDigest digest;
  for (std::size_t i = 0; i < layers->layers.size(); ++i) {
    const Descriptor& layer = layers->layers[i];
    const std::string name = "layer " + std::to_string(i + 1) + " " + layer.digest;
    visitor.begin_layer(name, layer);
    RegistryCall get;
    get.target = "/v2/" + ref->repository + "/blobs/" + layer.digest;
    const https::BodySink sink = [&](std::span<const std::byte> chunk) {
      digest.update(chunk);
      if (!visitor.layer_bytes(chunk)) {
        return std::optional<Error>(Error{"", "stopped by its reader"});
      }
      return std::optional<Error>();
    };
    auto reply = co_await session->stream(std::move(get), layer.size, sink);
    if (!reply) co_return reply.error().within(name);
    if (reply->status != 200) co_return session->refused(*reply, name);
    const std::string got = digest.finish();
    std::optional<Error> problem;
    if (got != layer.digest) {
      problem = Error{name, "content does not match its digest (it hashes to " + got + ")"};
    }
    visitor.end_layer(std::move(problem));
    ++out.layers;
  }
  co_return out;
}

}  // namespace

Expected<PulledImage> pull_image(const RegistrySettings& settings, std::string_view reference,
                                 std::string_view platform, LayerVisitor& visitor) {
  auto wanted = Platform::parse(platform.empty() ? "linux/amd64" : platform);
  if (!wanted) return wanted.error().within("--platform");
  net::io_context ioc(1);
  const std::string named(reference);
  std::optional<Expected<PulledImage>> result;
  net::co_spawn(
      ioc,
      [&]() -> net::awaitable<void> {
        result.emplace(co_await pull(settings, named, *wanted, visitor));
      },
      [&result, reference](const std::exception_ptr& error) {
        if (!error) return;
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          result.emplace(
              Error{"image " + quote(reference), std::string("internal error: ") + e.what()});
        } catch (...) {
          result.emplace(Error{"image " + quote(reference), "internal error"});
        }
      });
  ioc.run();
  if (!result) return Error{"image " + quote(reference), "the pull did not finish"};
  return std::move(*result);
}

}  // namespace cudagate
