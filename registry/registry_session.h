#pragma once
// Calls to one repository of one registry endpoint, one after another, for
// the commands that pull and push whole images and artifacts
// (registry/image_pull.h, registry/artifact_push.h), over
// https/streamed_exchange.h:
//
//   401 + challenge  -> answered once a call (registry/authorizer.h: a Bearer
//                       token for repository:<repo>:<actions>, or Basic
//                       credentials), then the call again
//   3xx + Location   -> followed, up to 5 times (a blob store: no
//                       Authorization to another host)
// Every other answer is the caller's to read, whatever its status.
//
// A connection a call (none is kept: these commands make a few dozen
// calls, each of which may stream GiB). Each step of a call (connecting,
// the header, each chunk of a body) has its own deadline.
//
// Errors name the registry and repository and the call; never a
// credential. Not thread-safe: one session is driven by one coroutine.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "https/streamed_exchange.h"
#include "https/tls_client.h"
#include "policy/config/policy.h"
#include "policy/image/image_ref.h"
#include "registry/auth.h"
#include "registry/authorizer.h"
#include "registry/descriptor.h"
#include "registry/image_lookup.h"
#include "registry/manifest.h"
#include "types/expected.h"

namespace cudagate {

struct RegistryCall {
  boost::beast::http::verb method = boost::beast::http::verb::get;
  // A path and query ("/v2/<repo>/manifests/latest"), or an absolute URL
  // (an upload's Location).
  std::string target;
  std::string accept;
  std::string content_type;  // with a body
  std::string body;
};

struct RegistryReply {
  int status = 0;
  std::string content_type;
  std::string location;
  std::string docker_content_digest;
  std::string oci_subject;  // the OCI-Subject header of a manifest PUT
  std::string body;         // collected by call(); a non-2xx body for stream()
};

// The image manifest a reference names, for a platform: the manifest of
// the platform's entry when the reference names an index.
struct ResolvedManifest {
  Descriptor descriptor;  // mediaType, digest, size
  std::string body;
};

struct RegistryAccess {
  std::shared_ptr<const https::TlsClient> tls;  // system CAs and registry.caFile
  std::optional<DockerConfig> credentials;      // registry.credentials, when the file exists
};

// The TLS trust and credentials of the policy's registry settings. Errors
// name the setting and the file: an unreadable caFile, a credentials file
// that exists and is not a dockerconfigjson.
[[nodiscard]] Expected<RegistryAccess> registry_access(const RegistrySettings& settings);

class RegistrySession {
 public:
  static constexpr std::chrono::seconds kStepTimeout{60};
  static constexpr std::size_t kMaxManifestBytes = std::size_t{4} << 20;

  // `actions` "pull" or "pull,push". `credentials` may be null; it and
  // `tls` must outlive the session.
  RegistrySession(boost::asio::any_io_executor executor, RegistryEndpoint endpoint,
                  std::string repository, const std::string& actions,
                  const Credentials* credentials, std::shared_ptr<const https::TlsClient> tls);

  // The answer with its body collected, up to `max_body` bytes (more is an
  // error).
  [[nodiscard]] boost::asio::awaitable<Expected<RegistryReply>> call(RegistryCall call,
                                                                     std::size_t max_body);
  // The answer, with a 2xx body handed to `sink` chunk by chunk, at most
  // `max_body` bytes.
  [[nodiscard]] boost::asio::awaitable<Expected<RegistryReply>> stream(RegistryCall call,
                                                                       std::uint64_t max_body,
                                                                       const https::BodySink& sink);

  // GET of the manifest `ref` names (its digest, else its tag), and of the
  // platform's entry when that is an index; what is named by digest must
  // hash to it.
  [[nodiscard]] boost::asio::awaitable<Expected<ResolvedManifest>> resolve_manifest(
      const ImageRef& ref, const Platform& platform);

  // An error for an answer the caller did not expect: `what` ("manifest
  // PUT"), the status, and the registry's own message when it gave one.
  [[nodiscard]] Error refused(const RegistryReply& reply, const std::string& what) const;

  // "host/repository", the place of this session's errors.
  [[nodiscard]] std::string where() const;
  [[nodiscard]] const std::string& repository() const { return repository_; }

 private:
  boost::asio::awaitable<Expected<RegistryReply>> perform(RegistryCall call, std::uint64_t max_body,
                                                          const https::BodySink* sink);

  boost::asio::any_io_executor executor_;
  RegistryEndpoint endpoint_;
  std::string repository_;
  Authorizer authorizer_;
  std::shared_ptr<const https::TlsClient> tls_;
};

}  // namespace cudagate
