// A registry call performed with its authorization and redirects, and a
// manifest resolved for a platform.
#include "registry/registry_session.h"

#include <boost/beast/http/field.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "https/endpoint.h"
#include "types/json_depth.h"
#include "types/quote.h"

namespace cudagate {

namespace net = boost::asio;
namespace http = boost::beast::http;

namespace {

constexpr int kMaxRedirects = 5;
constexpr std::size_t kMaxTokenBytes = std::size_t{64} << 10;

https::StreamLimits stream_limits(std::uint64_t max_body) {
  https::StreamLimits limits;
  limits.idle_timeout = RegistrySession::kStepTimeout;
  limits.max_body = max_body;
  return limits;
}

// The registry's own words of an error document ({"errors": [{"code",
// "message"}]}), else the start of the body.
std::string registry_message(const std::string& body) {
  if (body.empty()) return {};
  if (json_too_deep_at(body, 16) == std::string_view::npos) {
    const auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (doc.is_object()) {
      const auto errors = doc.find("errors");
      if (errors != doc.end() && errors->is_array() && !errors->empty() &&
          errors->front().is_object()) {
        const auto& first = errors->front();
        std::string out;
        for (const char* key : {"code", "message"}) {
          const auto it = first.find(key);
          if (it == first.end() || !it->is_string()) continue;
          out += out.empty() ? "" : ": ";
          out += it->get<std::string>();
        }
        if (!out.empty()) return printable(out, 200);
      }
    }
  }
  return printable(body, 200);
}

std::string media_type_of(const std::string& body, const std::string& content_type) {
  if (json_too_deep_at(body, 64) == std::string_view::npos) {
    const auto doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (doc.is_object()) {
      const auto it = doc.find("mediaType");
      if (it != doc.end() && it->is_string()) return it->get<std::string>();
    }
  }
  std::string out = content_type.substr(0, content_type.find(';'));
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

Expected<RegistryAccess> registry_access(const RegistrySettings& settings) {
  RegistryAccess out;
  https::TlsTrust trust;
  trust.ca_file = settings.ca_file;
  auto tls = https::TlsClient::make(trust);
  if (!tls) return Error{"registry.caFile", tls.error().message};
  out.tls = std::move(*tls);
  if (settings.credentials.empty()) return out;
  std::error_code ec;
  std::ifstream in(settings.credentials, std::ios::binary);
  if (!in) {
    // The default file of the server's Secret is absent where no Secret is
    // mounted: no credentials then.
    return out;
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto config = DockerConfig::parse(text.str());
  if (!config) {
    return Error{"registry.credentials " + settings.credentials, config.error().str()};
  }
  out.credentials = std::move(*config);
  return out;
}

RegistrySession::RegistrySession(net::any_io_executor executor, RegistryEndpoint endpoint,
                                 std::string repository, const std::string& actions,
                                 const Credentials* credentials,
                                 std::shared_ptr<const https::TlsClient> tls)
    : executor_(std::move(executor)),
      endpoint_(std::move(endpoint)),
      repository_(std::move(repository)),
      authorizer_(endpoint_.host, repository_, actions, credentials),
      tls_(std::move(tls)) {}

std::string RegistrySession::where() const {
  return endpoint_.host + "/" + repository_;
}

Error RegistrySession::refused(const RegistryReply& reply, const std::string& what) const {
  std::string message = what + ": the registry answered " + std::to_string(reply.status);
  if (reply.status == 401) {
    message += authorizer_.has_credentials()
                   ? " with the configured credentials"
                   : " (no credentials configured for " + endpoint_.host + ")";
  }
  if (const std::string said = registry_message(reply.body); !said.empty()) {
    message += " (" + said + ")";
  }
  return Error{where(), std::move(message)};
}

net::awaitable<Expected<RegistryReply>> RegistrySession::call(RegistryCall call,
                                                              std::size_t max_body) {
  return perform(std::move(call), max_body, nullptr);
}

net::awaitable<Expected<RegistryReply>> RegistrySession::stream(RegistryCall call,
                                                                std::uint64_t max_body,
                                                                const https::BodySink& sink) {
  return perform(std::move(call), max_body, &sink);
}

net::awaitable<Expected<RegistryReply>> RegistrySession::perform(RegistryCall call,
                                                                 std::uint64_t max_body,
                                                                 const https::BodySink* sink) {
  RegistryUrl at{endpoint_.tls, endpoint_.host, call.target};
  if (!call.target.starts_with("/")) {
    auto url = parse_registry_url(call.target);
    if (!url) {
      co_return Error{where(), "an unusable location " + quote(call.target, 200)};
    }
    at = std::move(*url);
  }
  const std::string what = std::string(http::to_string(call.method)) + " " + call.target;
  int redirects = 0;
  bool answered_challenge = false;
  while (true) {
    https::Request request{call.method, at.target, 11};
    request.set(http::field::host, at.host);
    request.set(http::field::user_agent, "cudagate");
    if (!call.accept.empty()) request.set(http::field::accept, call.accept);
    if (const std::string authorization = authorizer_.authorization_for(at.host);
        !authorization.empty()) {
      request.set(http::field::authorization, authorization);
    }
    if (call.method == http::verb::put || call.method == http::verb::post ||
        call.method == http::verb::patch) {
      if (!call.content_type.empty()) request.set(http::field::content_type, call.content_type);
      request.body() = call.body;
      request.prepare_payload();
    }
    request.keep_alive(false);

    RegistryReply reply;
    const https::BodySink collect = [&reply, max_body](std::span<const std::byte> chunk) {
      if (reply.body.size() + chunk.size() > max_body) {
        return std::optional<Error>(
            Error{"", "the answer exceeds " + std::to_string(max_body) + " bytes"});
      }
      reply.body.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
      return std::optional<Error>();
    };
    const https::Endpoint endpoint = https::endpoint_of_authority(at.host, at.tls);
    const https::StreamLimits limits = stream_limits(max_body);
    auto response = co_await https::streamed_exchange(executor_, endpoint, tls_, request, limits,
                                                      sink != nullptr ? *sink : collect);
    if (!response) co_return response.error().within(where() + ": " + what);
    const auto& header = response->header;
    reply.status = static_cast<int>(header.result_int());
    reply.content_type = std::string(header[http::field::content_type]);
    reply.location = std::string(header[http::field::location]);
    reply.docker_content_digest = std::string(header["Docker-Content-Digest"]);
    reply.oci_subject = std::string(header["OCI-Subject"]);
    if (reply.body.empty()) reply.body = std::move(response->body);

    if (reply.status == 401 && at.host == endpoint_.host && !answered_challenge) {
      answered_challenge = true;
      auto next = authorizer_.on_unauthorized(header[http::field::www_authenticate]);
      if (!next) co_return next.error();
      if (!next->has_value()) continue;
      const Authorizer::TokenRequest& token = **next;
      RegistryReply answer;
      https::Request token_request{http::verb::get, token.url.target, 11};
      token_request.set(http::field::host, token.url.host);
      token_request.set(http::field::user_agent, "cudagate");
      token_request.set(http::field::accept, "application/json");
      if (!token.authorization.empty()) {
        token_request.set(http::field::authorization, token.authorization);
      }
      token_request.keep_alive(false);
      const https::BodySink keep = [&answer](std::span<const std::byte> chunk) {
        if (answer.body.size() + chunk.size() > kMaxTokenBytes) {
          return std::optional<Error>(Error{"", "the token answer exceeds 64 KiB"});
        }
        answer.body.append(reinterpret_cast<const char*>(chunk.data()), chunk.size());
        return std::optional<Error>();
      };
      const https::Endpoint token_endpoint =
          https::endpoint_of_authority(token.url.host, token.url.tls);
      const https::StreamLimits token_limits = stream_limits(kMaxTokenBytes);
      auto token_response = co_await https::streamed_exchange(executor_, token_endpoint, tls_,
                                                              token_request, token_limits, keep);
      if (!token_response) co_return token_response.error().within("token endpoint");
      if (answer.body.empty()) answer.body = std::move(token_response->body);
      if (auto refused = authorizer_.on_token(static_cast<int>(token_response->header.result_int()),
                                              answer.body)) {
        co_return *refused;
      }
      continue;
    }
    const int status = reply.status;
    const bool redirect =
        status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
    if (!redirect || reply.location.empty()) co_return reply;
    if (++redirects > kMaxRedirects) {
      co_return Error{where(),
                      what + ": more than " + std::to_string(kMaxRedirects) + " redirects"};
    }
    if (reply.location.starts_with("/")) {
      at.target = reply.location;
    } else if (auto url = parse_registry_url(reply.location)) {
      at = std::move(*url);
    } else {
      co_return Error{where(),
                      what + ": redirect to an unusable location " + quote(reply.location, 200)};
    }
    // A 303 asks for a GET of the new location.
    if (status == 303) {
      call.method = http::verb::get;
      call.body.clear();
    }
  }
}

net::awaitable<Expected<ResolvedManifest>> RegistrySession::resolve_manifest(
    const ImageRef& ref, const Platform& platform) {
  std::string name = ref.digest.empty() ? ref.tag : ref.digest;
  std::string expected = ref.digest;
  for (int depth = 0; depth < 2; ++depth) {
    const std::string what = "manifest " + where() + (expected.empty() ? ":" : "@") + name;
    RegistryCall get;
    get.target = "/v2/" + repository_ + "/manifests/" + name;
    get.accept = manifest_accept();
    auto reply = co_await call(std::move(get), kMaxManifestBytes);
    if (!reply) co_return reply.error();
    if (reply->status != 200) co_return refused(*reply, what);
    const std::string digest = sha256_digest(reply->body);
    if (!expected.empty() && digest != expected) {
      std::string message = what;
      message += ": content does not match its digest (it hashes to ";
      message += digest;
      message += ")";
      co_return Error{where(), std::move(message)};
    }
    auto manifest = parse_manifest(reply->body, reply->content_type);
    if (!manifest) co_return manifest.error().within(what);
    if (manifest->kind == Manifest::Kind::image) {
      ResolvedManifest out;
      out.descriptor.media_type = media_type_of(reply->body, reply->content_type);
      out.descriptor.digest = digest;
      out.descriptor.size = reply->body.size();
      out.body = std::move(reply->body);
      co_return out;
    }
    if (depth > 0) co_return Error{where(), what + ": an index inside an index"};
    const IndexEntry* entry = select_platform(*manifest, platform);
    if (entry == nullptr) {
      const std::string offered = platforms_offered(*manifest);
      co_return Error{where(), what + ": the index has no manifest for " + platform.str() +
                                   (offered.empty() ? std::string() : " (it has " + offered + ")")};
    }
    name = entry->digest;
    expected = entry->digest;
  }
  co_return Error{where(), "manifest " + name + ": an index inside an index"};
}

}  // namespace cudagate
