// Request paths from the rows of the API call table, and its JSON form.
#include "kube/api_calls.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace cudagate::kube {

std::string ApiCall::group_version_path() const {
  if (group.empty()) return "/api/" + std::string(version);
  return "/apis/" + std::string(group) + "/" + std::string(version);
}

std::string ApiCall::collection_path(std::string_view namespace_) const {
  std::string path = group_version_path();
  if (namespaced && !namespace_.empty()) {
    path += "/namespaces/";
    path += namespace_;
  }
  path += "/";
  path += resource;
  return path;
}

std::string ApiCall::object_path(std::string_view namespace_, std::string_view name) const {
  return collection_path(namespace_) + "/" + std::string(name);
}

std::string ApiCall::api_version() const {
  if (group.empty()) return std::string(version);
  return std::string(group) + "/" + std::string(version);
}

std::string api_calls_json() {
  std::string out = "[";
  bool first = true;
  for (const ApiCall& call : kApiCalls) {
    nlohmann::ordered_json rbac = nlohmann::ordered_json::array({call.verb});
    if (!call.also.empty()) rbac.push_back(call.also);
    const nlohmann::ordered_json row = {{"verb", call.verb},
                                        {"group", call.group},
                                        {"resource", call.resource},
                                        {"rbac", std::move(rbac)},
                                        {"when", call.when}};
    out += first ? "\n  " : ",\n  ";
    out += row.dump();
    first = false;
  }
  out += "\n]\n";
  return out;
}

}  // namespace cudagate::kube
