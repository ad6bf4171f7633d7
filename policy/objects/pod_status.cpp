// Reading pod status and events from kubectl's output.
#include "policy/objects/pod_status.h"

#include "policy/objects/document.h"

namespace cudagate {
namespace {

using nlohmann::json;

Expected<std::int64_t> int_field(const json& object, std::string_view key, std::string_view path) {
  const auto it = object.find(std::string(key));
  if (it == object.end() || it->is_null()) return std::int64_t{0};
  if (!it->is_number_integer()) return Error{field_path(path, key), type_error("an integer", *it)};
  return it->get<std::int64_t>();
}

// Reads the state object `state` ({waiting: {...}} or {terminated: {...}}).
std::optional<Error> read_state(const json& state, const std::string& path, std::string& kind,
                                std::string& reason, std::string& message,
                                std::int64_t* exit_code) {
  for (const char* name : {"waiting", "terminated", "running"}) {
    auto part = object_field(state, name, path);
    if (!part) return part.error();
    if (*part == nullptr) continue;
    const std::string at = field_path(path, name);
    kind = name;
    auto r = string_field(**part, "reason", at, false);
    if (!r) return r.error();
    auto m = string_field(**part, "message", at, false);
    if (!m) return m.error();
    reason = std::move(*r);
    message = std::move(*m);
    if (exit_code != nullptr) {
      auto code = int_field(**part, "exitCode", at);
      if (!code) return code.error();
      *exit_code = *code;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<Error> read_statuses(const json& status, const char* key, bool init, PodReport& out) {
  auto list = array_field(status, key, "status");
  if (!list) return list.error();
  if (*list == nullptr) return std::nullopt;
  for (std::size_t i = 0; i < (*list)->size(); ++i) {
    const json& item = (**list)[i];
    const std::string path = index_path(field_path("status", key), i);
    if (!item.is_object()) return Error{path, type_error("an object", item)};
    ContainerReport c;
    c.init = init;
    auto name = string_field(item, "name", path, false);
    if (!name) return name.error();
    c.name = std::move(*name);
    auto image = string_field(item, "image", path, false);
    if (!image) return image.error();
    c.image = std::move(*image);
    auto restarts = int_field(item, "restartCount", path);
    if (!restarts) return restarts.error();
    c.restarts = *restarts;
    auto state = object_field(item, "state", path);
    if (!state) return state.error();
    if (*state != nullptr) {
      if (auto e = read_state(**state, field_path(path, "state"), c.state, c.reason, c.message,
                              nullptr)) {
        return e;
      }
    }
    auto last = object_field(item, "lastState", path);
    if (!last) return last.error();
    if (*last != nullptr) {
      std::string kind;
      if (auto e = read_state(**last, field_path(path, "lastState"), kind, c.last_reason,
                              c.last_message, &c.last_exit_code)) {
        return e;
      }
    }
    out.containers.push_back(std::move(c));
  }
  return std::nullopt;
}

}  // namespace

Expected<PodReport> pod_report_from_json(const json& pod, std::string_view where) {
  const std::string w(where);
  if (!pod.is_object()) return Error{w, "expected a Pod, got " + std::string(pod.type_name())};
  PodReport out;
  auto metadata = object_field(pod, "metadata", "");
  if (!metadata) return metadata.error().within(w);
  if (*metadata != nullptr) {
    for (auto [key, target] :
         {std::pair{"name", &out.name}, std::pair{"namespace", &out.namespace_},
          std::pair{"uid", &out.uid}}) {
      auto v = string_field(**metadata, key, "metadata", false);
      if (!v) return v.error().within(w);
      *target = std::move(*v);
    }
  }
  auto spec = object_field(pod, "spec", "");
  if (!spec) return spec.error().within(w);
  if (*spec != nullptr) {
    auto node = string_field(**spec, "nodeName", "spec", false);
    if (!node) return node.error().within(w);
    out.node_name = std::move(*node);
  }
  auto status = object_field(pod, "status", "");
  if (!status) return status.error().within(w);
  if (*status != nullptr) {
    auto phase = string_field(**status, "phase", "status", false);
    if (!phase) return phase.error().within(w);
    out.phase = std::move(*phase);
    if (auto e = read_statuses(**status, "initContainerStatuses", true, out)) return e->within(w);
    if (auto e = read_statuses(**status, "containerStatuses", false, out)) return e->within(w);
  }
  return out;
}

namespace {

std::optional<Error> take_event(const json& e, const std::string& where, const PodReport& pod,
                                std::vector<PodEvent>& out) {
  if (!e.is_object()) return Error{where, type_error("an Event", e)};
  auto kind = string_field(e, "kind", "", false);
  if (!kind) return kind.error().within(where);
  if (!kind->empty() && *kind != "Event") return std::nullopt;
  // core/v1 names the object in involvedObject, events.k8s.io/v1 in regarding.
  const char* object_key = e.contains("regarding") ? "regarding" : "involvedObject";
  auto object = object_field(e, object_key, "");
  if (!object) return object.error().within(where);
  if (*object == nullptr) return std::nullopt;
  std::string fields[4];
  const char* names[4] = {"kind", "name", "namespace", "uid"};
  for (int i = 0; i < 4; ++i) {
    auto v = string_field(**object, names[i], object_key, false);
    if (!v) return v.error().within(where);
    fields[i] = std::move(*v);
  }
  if (fields[0] != "Pod" || fields[1] != pod.name) return std::nullopt;
  if (!fields[2].empty() && !pod.namespace_.empty() && fields[2] != pod.namespace_) {
    return std::nullopt;
  }
  if (!fields[3].empty() && !pod.uid.empty() && fields[3] != pod.uid) return std::nullopt;
  PodEvent ev;
  ev.where = where;
  for (auto [key, target] : {std::pair{"type", &ev.type}, std::pair{"reason", &ev.reason}}) {
    auto v = string_field(e, key, "", false);
    if (!v) return v.error().within(where);
    *target = std::move(*v);
  }
  auto message = string_field(e, e.contains("note") ? "note" : "message", "", false);
  if (!message) return message.error().within(where);
  ev.message = std::move(*message);
  auto src = object_field(e, "source", "");
  if (!src) return src.error().within(where);
  if (*src != nullptr) {
    auto component = string_field(**src, "component", "source", false);
    if (!component) return component.error().within(where);
    ev.source = std::move(*component);
  }
  if (ev.source.empty()) {
    auto controller = string_field(e, "reportingController", "", false);
    if (!controller) return controller.error().within(where);
    ev.source = std::move(*controller);
  }
  auto count = int_field(e, e.contains("series") ? "deprecatedCount" : "count", "");
  if (!count) return count.error().within(where);
  ev.count = *count == 0 ? 1 : *count;
  out.push_back(std::move(ev));
  return std::nullopt;
}

}  // namespace

std::optional<Error> read_pod_events_document(const json& v, const std::string& where,
                                              const PodReport& pod, std::vector<PodEvent>& out) {
  const json* items = nullptr;
  if (v.is_array()) {
    items = &v;
  } else if (v.is_object() && v.contains("items")) {
    auto list = array_field(v, "items", "");
    if (!list) return list.error().within(where);
    items = *list;
  }
  if (items == nullptr) return take_event(v, where, pod, out);
  for (std::size_t i = 0; i < items->size(); ++i) {
    if (auto e = take_event((*items)[i], where + ": " + index_path("items", i), pod, out)) return e;
  }
  return std::nullopt;
}

Expected<std::vector<PodEvent>> read_pod_events(std::string_view text, std::string_view source,
                                                const PodReport& pod) {
  auto docs = parse_source_documents(text, source);
  if (!docs) return docs.error();
  std::vector<PodEvent> out;
  const bool several = docs->count > 1;
  for (const SourceDocument& doc : docs->documents) {
    const std::string where =
        several ? std::string(source) + ":" + std::to_string(doc.line) : std::string(source);
    if (auto e = read_pod_events_document(doc.value, where, pod, out)) return *e;
  }
  return out;
}

}  // namespace cudagate
