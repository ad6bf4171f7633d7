// The webhook's HTTP endpoints: each request dispatched by method and path, admissions judged
// against one state snapshot, counted in the metrics and logged as one line.
#include "server/routes.h"

#include <spdlog/spdlog.h>

#include <array>
#include <boost/beast/core/string.hpp>
#include <chrono>
#include <cstddef>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "admission/admission.h"
#include "admission/admission_response.h"
#include "admission/json_write.h"
#include "policy/rules/metadata.h"
#include "server/reports_endpoint.h"

namespace cudagate {
namespace {

namespace http = boost::beast::http;

constexpr std::string_view kValidate = "/validate";
constexpr std::string_view kMutate = "/mutate";

// An admission path: the endpoint and the mode its last segment names, if any.
// The API server's webhook configuration cannot carry a query string (each
// segment of `service.path` must be a DNS-1123 subdomain, and `url` may have
// no query), so `/validate/warn` says what `/validate?mode=warn` says.
struct AdmissionPath {
  Endpoint endpoint;
  std::string_view mode;  // empty: none in the path
};

std::optional<AdmissionPath> admission_path(std::string_view path) {
  for (const auto& [prefix, endpoint] :
       {std::pair{kValidate, Endpoint::validate}, std::pair{kMutate, Endpoint::mutate}}) {
    if (!path.starts_with(prefix)) continue;
    const std::string_view rest = path.substr(prefix.size());
    if (rest.empty()) return AdmissionPath{endpoint, {}};
    if (rest.front() != '/' || rest.size() == 1 || rest.find('/', 1) != std::string_view::npos) {
      return std::nullopt;
    }
    return AdmissionPath{endpoint, rest.substr(1)};
  }
  return std::nullopt;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && hex_value(text[i + 1]) >= 0 &&
               hex_value(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16 + hex_value(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// The first value of parameter `name` in a query string, decoded.
std::optional<std::string> query_parameter(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const auto eq = pair.find('=');
    if (percent_decode(pair.substr(0, eq)) != name) continue;
    return eq == std::string_view::npos ? std::string{} : percent_decode(pair.substr(eq + 1));
  }
  return std::nullopt;
}

bool is_json_media_type(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  return boost::beast::iequals(type, "application/json");
}

HttpResponse text_response(http::status status, std::string body, std::string_view content_type) {
  HttpResponse res{status, 11};
  res.set(http::field::content_type, content_type);
  res.body() = std::move(body);
  return res;
}

HttpResponse method_not_allowed(std::string_view allowed) {
  HttpResponse res = json_error(http::status::method_not_allowed,
                                "method not allowed; use " + std::string(allowed));
  res.set(http::field::allow, allowed);
  return res;
}

// What one recorded admission adds to the metrics beside its request:
// container metadata per value (cuda and archs always, found or not: an
// unknown value is what the counter must show; require when the image
// declares one), and, in one pass over the findings, the rules that met a
// gap in the matrix and the rules behind the decision (deny, warn, ...),
// each once per admission.
void count_record(const Decision& record, std::string_view decision, WebhookMetrics& metrics) {
  for (const auto& container : record.containers) {
    if (!container.gpu) continue;
    for (const SourcedValue* value : {&container.cuda, &container.archs}) {
      metrics.metadata_lookup(value->value.empty() ? "unknown" : value->source,
                              value->value.empty() ? "unknown" : "found");
    }
    if (!container.require.value.empty()) {
      metrics.metadata_lookup(container.require.source, "found");
    }
  }
  // Once per admission and rule; gaps once per label (rules share one).
  std::array<bool, kRuleTable.size()> found{};
  std::array<bool, kRuleTable.size()> gap{};
  for (const auto& group : record.groups) {
    for (const Finding& finding : group.findings) {
      found.at(static_cast<std::size_t>(finding.rule)) = true;
      if (finding.matrix_gap()) {
        gap.at(static_cast<std::size_t>(rule_info(finding.rule).gap_label)) = true;
      }
    }
  }
  for (const RuleInfo& rule : kRuleTable) {
    if (gap.at(static_cast<std::size_t>(rule.rule))) metrics.matrix_gap_admission(rule.rule);
  }
  for (const RuleInfo& rule : kRuleTable) {
    if (found.at(static_cast<std::size_t>(rule.rule)))
      metrics.admission_finding(rule.rule, decision);
  }
}

std::string error_message_of(const std::string& body) {
  const auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (json.is_object() && json.contains("error") && json["error"].is_string()) {
    return json["error"].get<std::string>();
  }
  return "invalid request";
}

AdmissionContext context_of(const Snapshot& snapshot) {
  AdmissionContext context{*snapshot.db, *snapshot.policy, *snapshot.inventory};
  context.fleet_platform = snapshot.fleet_platform;
  context.claims = snapshot.claims.get();
  return context;
}

// The configs of `images` that the registry cache holds, into `facts`.
// What is left of `images` are the ones it misses, whose lookups are worth
// waiting for; an image the cache knows has no config to give is judged
// without one.
void gather_cached(RegistryClient& registry, std::vector<ImageWanted>& images,
                   RegistryFacts& facts) {
  std::size_t kept = 0;
  for (ImageWanted& wanted : images) {
    RegistryClient::Answer answer = registry.cached(wanted.image, wanted.platform);
    if (answer.config) {
      facts.add(std::move(wanted.image), std::move(answer.config));
    } else if (answer.state == RegistryClient::Answer::State::miss) {
      if (&images[kept] != &wanted) images[kept] = std::move(wanted);
      ++kept;
    }
  }
  images.resize(kept);
}

// A review read whose images are being looked up, with the configs the
// cache held.
struct PendingReview {
  ReadReview read;
  RegistryFacts facts;
};

// Longer than any valid name (253 bytes) or error message of ours.
constexpr std::size_t kMaxLogValue = 1024;

// The HTTP answer to a judged admission, counted and logged.
HttpResponse record(AdmissionOutcome&& outcome, std::string_view endpoint_name,
                    const HttpRequest& request, const ServerState& state, WebhookMetrics& metrics,
                    std::chrono::steady_clock::time_point start) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  HttpResponse res{static_cast<http::status>(outcome.http_status), request.version()};
  res.set(http::field::content_type, outcome.content_type);
  res.body() = std::move(outcome.body);

  if (outcome.dry_run) return res;
  // A request that was not judged (not a pod-creating change, or not a
  // review at all) is a skip, as docs/contract.md §2.6 names it.
  const std::string_view verdict = to_string(outcome.verdict.value_or(Verdict::skip));
  const std::string_view decision = to_string(outcome.decision);
  const std::string_view effective_mode = outcome.mode ? to_string(*outcome.mode) : "none";
  metrics.admission(endpoint_name, verdict, decision, effective_mode, seconds);
  if (outcome.record) {
    count_record(*outcome.record, decision, metrics);
    state.reports().record(std::move(*outcome.record));
  }

  // One JSON object per decision, written directly (members in key order).
  const bool refused = outcome.http_status != 200;
  std::string line;
  line.reserve(256);
  // Names, namespaces and kinds come from the request and are not yet
  // validated: each value is cut at kMaxLogValue bytes.
  auto member = [&line](std::string_view key, std::string_view value) {
    line += line.empty() ? '{' : ',';
    append_json_string(line, key);
    line += ':';
    const bool cut = value.size() > kMaxLogValue;
    if (cut) value = value.substr(0, kMaxLogValue);
    if (is_valid_utf8(value) && !cut) {
      append_json_string(line, value);
    } else {
      append_json_string(line, valid_utf8(value) + (cut ? "..." : ""));
    }
  };
  member("decision", decision);
  line += R"(,"duration_ms":)";
  // Microseconds are as fine as a request's duration means anything.
  fmt::format_to(std::back_inserter(line), "{:.3f}", seconds * 1000.0);
  member("endpoint", endpoint_name);
  if (refused) member("error", error_message_of(res.body()));
  member("kind", outcome.kind);
  member("mode", effective_mode);
  member("msg", refused ? "admission request refused" : "admission");
  member("name", outcome.name);
  member("namespace", outcome.namespace_);
  if (refused) line += R"(,"status":)" + std::to_string(outcome.http_status);
  member("uid", outcome.uid);
  member("verdict", verdict);
  line += '}';
  if (refused) {
    spdlog::warn("{}", line);
  } else {
    spdlog::info("{}", line);
  }
  return res;
}

// The mode of an admission: the path's, else the query's `mode` parameter.
std::string admission_mode(const AdmissionPath& admission, std::string_view query) {
  if (!admission.mode.empty()) return std::string(admission.mode);
  return query_parameter(query, "mode").value_or("");
}

std::string_view endpoint_name(Endpoint endpoint) {
  return endpoint == Endpoint::validate ? "validate" : "mutate";
}

HttpResponse admit(const AdmissionPath& admission, std::string_view query,
                   const HttpRequest& request, const ServerState& state, WebhookMetrics& metrics,
                   AdmissionWorkspaces& workspaces) {
  const auto start = std::chrono::steady_clock::now();
  const auto snapshot = state.snapshot();
  const std::string mode = admission_mode(admission, query);
  const auto workspace = workspaces.acquire();
  const AdmissionContext context = context_of(*snapshot);
  ReadReview read =
      read_admission(admission.endpoint, mode, request.body().padded(), context, *workspace);
  return record(std::move(decide_admission(read, context, RegistryFacts{}, *workspace)),
                endpoint_name(admission.endpoint), request, state, metrics, start);
}

// The admission paths of a request: the endpoint, or nullopt for another
// path or a request the synchronous routing answers (wrong method or type).
std::optional<AdmissionPath> admission_endpoint(const HttpRequest& request) {
  const std::string_view target = request.target();
  const auto admission = admission_path(target.substr(0, target.find('?')));
  if (!admission) return std::nullopt;
  if (request.method() != http::verb::post) return std::nullopt;
  if (!is_json_media_type(request[http::field::content_type])) return std::nullopt;
  return admission;
}

}  // namespace

void route(const HttpRequest& request, const ServerState& state, WebhookMetrics& metrics,
           AdmissionWorkspaces& workspaces, RegistryClient* registry, Responder respond) {
  const auto endpoint = admission_endpoint(request);
  if (registry == nullptr || !endpoint) {
    respond(route(request, state, metrics, workspaces));
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string_view name = endpoint_name(endpoint->endpoint);
  const std::string_view target = request.target();
  const auto question = target.find('?');
  const std::string mode =
      admission_mode(*endpoint, question == std::string_view::npos ? std::string_view{}
                                                                   : target.substr(question + 1));
  auto snapshot = state.snapshot();
  const AdmissionContext context = context_of(*snapshot);
  // Read: the body parsed once, into the workload and the images it runs.
  auto workspace = workspaces.acquire();
  ReadReview read =
      read_admission(endpoint->endpoint, mode, request.body().padded(), context, *workspace);
  // Gather: what the registry cache holds of those images.
  RegistryFacts facts;
  gather_cached(*registry, read.images, facts);
  if (read.images.empty()) {
    // Decide.
    respond(record(std::move(decide_admission(read, context, facts, *workspace)), name, request,
                   state, metrics, start));
    return;
  }
  // Some image is not cached: look it up within the policy's budget, then
  // decide with what came (the rest stays unknown, and its lookup goes on
  // to fill the cache). The workspace serves other admissions meanwhile.
  read.detach();
  auto pending = std::make_shared<PendingReview>(PendingReview{std::move(read), std::move(facts)});
  const auto budget = snapshot->policy->registry.timeout;
  registry->lookup(pending->read.images, budget,
                   [&request, &state, &metrics, &workspaces, registry, respond = std::move(respond),
                    start, name, pending, snapshot = std::move(snapshot)] {
                     gather_cached(*registry, pending->read.images, pending->facts);
                     const auto lent = workspaces.acquire();
                     respond(record(std::move(decide_admission(pending->read, context_of(*snapshot),
                                                               pending->facts, *lent)),
                                    name, request, state, metrics, start));
                   });
}

HttpResponse route(const HttpRequest& request, const ServerState& state, WebhookMetrics& metrics,
                   AdmissionWorkspaces& workspaces) {
  const std::string_view target = request.target();
  const auto question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const std::string_view query =
      question == std::string_view::npos ? std::string_view{} : target.substr(question + 1);

  if (const auto admission = admission_path(path)) {
    if (request.method() != http::verb::post) return method_not_allowed("POST");
    const std::string_view content_type = request[http::field::content_type];
    if (!is_json_media_type(content_type)) {
      return json_error(http::status::unsupported_media_type,
                        content_type.empty()
                            ? std::string("missing Content-Type; expected application/json")
                            : "unsupported Content-Type \"" + std::string(content_type) +
                                  "\"; expected application/json");
    }
    return admit(*admission, query, request, state, metrics, workspaces);
  }
  if (path == "/healthz") {
    if (request.method() != http::verb::get) return method_not_allowed("GET");
    return text_response(http::status::ok, "ok\n", "text/plain; charset=utf-8");
  }
  if (path == "/readyz") {
    if (request.method() != http::verb::get) return method_not_allowed("GET");
    if (state.ready()) return text_response(http::status::ok, "ok\n", "text/plain; charset=utf-8");
    return json_error(http::status::service_unavailable,
                      state.shutting_down() ? "shutting down" : "not ready");
  }
  if (path == "/reports") {
    if (request.method() != http::verb::get) return method_not_allowed("GET");
    return reports_response(query_parameter(query, "format").value_or("json"),
                            query_parameter(query, "namespace").value_or(""), state);
  }
  if (path == "/metrics") {
    if (request.method() != http::verb::get) return method_not_allowed("GET");
    return text_response(http::status::ok, metrics.render(), kMetricsContentType);
  }
  return json_error(http::status::not_found, "not found: " + std::string(path));
}

}  // namespace cudagate
