// Reading a kubeconfig's current context with yaml-cpp, and the in-cluster
// service account configuration, into a ClusterConfig.
#include "kube/cluster_config.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "types/base64.h"
#include "types/field_path.h"

extern char** environ;

namespace cudagate::kube {
namespace {

std::string folder_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string resolve(const std::string& folder, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  return folder + "/" + path;
}

// A named entry of clusters/users/contexts: the map under `inner`.
Expected<YAML::Node> find_named(const YAML::Node& root, const std::string& list,
                                const std::string& inner, const std::string& name,
                                const std::string& path) {
  const YAML::Node entries = root[list];
  if (!entries || entries.IsNull()) {
    return Error{place(path, 0, list), "is missing; \"" + name + "\" is not defined"};
  }
  if (!entries.IsSequence()) return Error{place(path, 0, list), "expected a list"};
  // "kubeconfig: users[2]", the place of one entry in errors.
  const auto entry_at = [&](std::size_t i) { return place(path, 0, index_path(list, i)); };
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const YAML::Node entry = entries[i];
    if (!entry.IsMap()) return Error{entry_at(i), "expected a map"};
    const YAML::Node entry_name = entry["name"];
    if (entry_name && entry_name.IsScalar() && entry_name.as<std::string>() == name) {
      const YAML::Node body = entry[inner];
      if (body && !body.IsNull() && !body.IsMap()) {
        return Error{field_path(entry_at(i), inner), "expected a map"};
      }
      return body ? body : YAML::Node(YAML::NodeType::Map);
    }
  }
  return Error{place(path, 0, list), "has no entry named \"" + name + "\""};
}

// The string at `node[key]`, "" when absent; an error when not a scalar.
Expected<std::string> string_field(const YAML::Node& node, const std::string& key,
                                   const std::string& where) {
  const YAML::Node v = node[key];
  if (!v || v.IsNull()) return std::string();
  if (!v.IsScalar()) return Error{field_path(where, key), "expected a string"};
  return v.as<std::string>();
}

Expected<std::string> data_field(const YAML::Node& node, const std::string& key,
                                 const std::string& where) {
  auto text = string_field(node, key, where);
  if (!text || text->empty()) return text;
  // Kubeconfigs wrap long values; the wrapping is no part of the data.
  std::string joined;
  for (const char c : *text) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') joined.push_back(c);
  }
  auto decoded = base64_decode(joined);
  if (!decoded) return Error{field_path(where, key), "expected base64 data"};
  return std::move(*decoded);
}

Expected<ExecPlugin> read_exec(const YAML::Node& exec, const std::string& where,
                               const std::string& folder) {
  if (!exec.IsMap()) return Error{where, "expected a map"};
  ExecPlugin plugin;
  auto api_version = string_field(exec, "apiVersion", where);
  if (!api_version) return api_version.error();
  if (*api_version != "client.authentication.k8s.io/v1" &&
      *api_version != "client.authentication.k8s.io/v1beta1") {
    return Error{
        field_path(where, "apiVersion"),
        "expected client.authentication.k8s.io/v1 (or v1beta1), got \"" + *api_version + "\""};
  }
  plugin.api_version = *api_version;
  auto command = string_field(exec, "command", where);
  if (!command) return command.error();
  if (command->empty()) return Error{field_path(where, "command"), "is required"};
  // A bare name is looked up in PATH; a relative path is the kubeconfig's.
  plugin.command = command->find('/') == std::string::npos ? *command : resolve(folder, *command);
  if (const YAML::Node args = exec["args"]; args && !args.IsNull()) {
    if (!args.IsSequence()) return Error{field_path(where, "args"), "expected a list of strings"};
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (!args[i].IsScalar()) {
        return Error{where + ".args[" + std::to_string(i) + "]", "expected a string"};
      }
      plugin.args.push_back(args[i].as<std::string>());
    }
  }
  if (const YAML::Node env = exec["env"]; env && !env.IsNull()) {
    if (!env.IsSequence())
      return Error{field_path(where, "env"), "expected a list of {name, value}"};
    for (std::size_t i = 0; i < env.size(); ++i) {
      const std::string at = index_path(field_path(where, "env"), i);
      if (!env[i].IsMap()) return Error{at, "expected {name, value}"};
      auto name = string_field(env[i], "name", at);
      if (!name) return name.error();
      auto value = string_field(env[i], "value", at);
      if (!value) return value.error();
      if (name->empty()) return Error{field_path(at, "name"), "is required"};
      plugin.env.emplace_back(*name, *value);
    }
  }
  return plugin;
}

Expected<ClusterConfig> read_kubeconfig(const YAML::Node& root, const std::string& path) {
  if (!root.IsMap())
    return Error{path, "expected a kubeconfig (a map with clusters, users, contexts)"};
  auto current = string_field(root, "current-context", path);
  if (!current) return current.error();
  if (current->empty()) {
    return Error{path + ": current-context",
                 "is not set (kubectl config use-context NAME sets it)"};
  }
  auto context = find_named(root, "contexts", "context", *current, path);
  if (!context) return context.error();
  const std::string context_where = path + ": contexts[" + *current + "].context";
  auto cluster_name = string_field(*context, "cluster", context_where);
  if (!cluster_name) return cluster_name.error();
  if (cluster_name->empty()) return Error{field_path(context_where, "cluster"), "is required"};
  auto user_name = string_field(*context, "user", context_where);
  if (!user_name) return user_name.error();

  const std::string folder = folder_of(path);
  ClusterConfig config;
  config.source = "kubeconfig " + path + " (context " + *current + ")";

  auto cluster = find_named(root, "clusters", "cluster", *cluster_name, path);
  if (!cluster) return cluster.error();
  const std::string cluster_where = path + ": clusters[" + *cluster_name + "].cluster";
  auto server = string_field(*cluster, "server", cluster_where);
  if (!server) return server.error();
  if (server->empty()) return Error{field_path(cluster_where, "server"), "is required"};
  auto address = parse_server_url(*server, field_path(cluster_where, "server"));
  if (!address) return address.error();
  config.server = std::move(*address);
  auto ca_data = data_field(*cluster, "certificate-authority-data", cluster_where);
  if (!ca_data) return ca_data.error();
  config.ca_pem = std::move(*ca_data);
  auto ca_file = string_field(*cluster, "certificate-authority", cluster_where);
  if (!ca_file) return ca_file.error();
  config.ca_file = resolve(folder, *ca_file);
  auto server_name = string_field(*cluster, "tls-server-name", cluster_where);
  if (!server_name) return server_name.error();
  config.tls_server_name = *server_name;
  if (const YAML::Node skip = (*cluster)["insecure-skip-tls-verify"]; skip && !skip.IsNull()) {
    bool value = false;
    if (!skip.IsScalar() || !YAML::convert<bool>::decode(skip, value)) {
      return Error{field_path(cluster_where, "insecure-skip-tls-verify"), "expected true or false"};
    }
    config.insecure_skip_tls_verify = value;
  }

  if (!user_name->empty()) {
    auto user = find_named(root, "users", "user", *user_name, path);
    if (!user) return user.error();
    const std::string user_where = path + ": users[" + *user_name + "].user";
    auto token = string_field(*user, "token", user_where);
    if (!token) return token.error();
    config.token = *token;
    auto token_file = string_field(*user, "tokenFile", user_where);
    if (!token_file) return token_file.error();
    config.token_file = resolve(folder, *token_file);
    auto cert_data = data_field(*user, "client-certificate-data", user_where);
    if (!cert_data) return cert_data.error();
    config.client_cert_pem = std::move(*cert_data);
    auto cert_file = string_field(*user, "client-certificate", user_where);
    if (!cert_file) return cert_file.error();
    config.client_cert_file = resolve(folder, *cert_file);
    auto key_data = data_field(*user, "client-key-data", user_where);
    if (!key_data) return key_data.error();
    config.client_key_pem = std::move(*key_data);
    auto key_file = string_field(*user, "client-key", user_where);
    if (!key_file) return key_file.error();
    config.client_key_file = resolve(folder, *key_file);
    const bool has_cert = !config.client_cert_pem.empty() || !config.client_cert_file.empty();
    const bool has_key = !config.client_key_pem.empty() || !config.client_key_file.empty();
    if (has_cert != has_key) {
      return Error{user_where, has_cert ? "client-certificate without client-key"
                                        : "client-key without client-certificate"};
    }
    for (const char* unsupported : {"auth-provider", "username"}) {
      if ((*user)[unsupported]) {
        return Error{field_path(user_where, unsupported),
                     "is not supported; use a token, a client certificate or an exec plugin"};
      }
    }
    if (const YAML::Node exec = (*user)["exec"]; exec && !exec.IsNull()) {
      auto plugin = read_exec(exec, field_path(user_where, "exec"), folder);
      if (!plugin) return plugin.error();
      config.exec = std::move(*plugin);
    }
  }
  return config;
}

Expected<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Error{path, "cannot read: " + std::error_code(errno, std::generic_category()).message()};
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Expected<ServerAddress> parse_server_url(std::string_view url, const std::string& where) {
  const Error bad{where, "expected https://HOST[:PORT][/PATH], got \"" + std::string(url) + "\""};
  constexpr std::string_view kScheme = "https://";
  if (url.starts_with("http://")) {
    return Error{where, "plain http is not supported: \"" + std::string(url) + "\""};
  }
  if (!url.starts_with(kScheme)) return bad;
  std::string_view rest = url.substr(kScheme.size());
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  ServerAddress out;
  out.path_prefix = std::string(path);
  std::string_view port;
  if (authority.starts_with("[")) {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad;
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad;
      port = after.substr(1);
      if (port.empty()) return bad;
    }
  } else {
    const std::size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      authority = authority.substr(0, colon);
      if (port.empty()) return bad;
    }
    out.host = std::string(authority);
  }
  if (out.host.empty() || out.host.find('@') != std::string::npos) return bad;
  if (!port.empty()) {
    if (port.size() > 5) return bad;
    unsigned value = 0;
    for (const char c : port) {
      if (c < '0' || c > '9') return bad;
      value = value * 10 + static_cast<unsigned>(c - '0');
    }
    if (value == 0 || value > 65535) return bad;
    out.port = static_cast<std::uint16_t>(value);
  }
  return out;
}

Expected<ClusterConfig> parse_kubeconfig(std::string_view text, const std::string& path) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return read_kubeconfig(root, path);
  } catch (const YAML::Exception& e) {
    const std::string line =
        e.mark.is_null() ? std::string() : ":" + std::to_string(e.mark.line + 1);
    return Error{path + line, "not a valid kubeconfig: " + e.msg};
  } catch (const std::exception& e) {
    return Error{path, std::string("not a valid kubeconfig: ") + e.what()};
  }
}

Expected<ClusterConfig> load_kubeconfig(const std::string& path) {
  auto text = read_file(path);
  if (!text) return text.error();
  return parse_kubeconfig(*text, path);
}

Expected<std::string> kubeconfig_path(const std::string& flag,
                                      const std::map<std::string, std::string>& env) {
  if (!flag.empty()) return flag;
  if (const auto it = env.find("KUBECONFIG"); it != env.end() && !it->second.empty()) {
    std::string_view list = it->second;
    while (!list.empty()) {
      const std::size_t colon = list.find(':');
      const std::string candidate(list.substr(0, colon));
      std::error_code ec;
      if (!candidate.empty() && std::filesystem::exists(candidate, ec)) return candidate;
      if (colon == std::string_view::npos) break;
      list.remove_prefix(colon + 1);
    }
    return Error{"KUBECONFIG", "none of the files exists: " + it->second};
  }
  if (const auto home = env.find("HOME"); home != env.end() && !home->second.empty()) {
    return home->second + "/.kube/config";
  }
  return Error{"--kubeconfig", "no kubeconfig: neither --kubeconfig, KUBECONFIG nor HOME is set"};
}

Expected<ClusterConfig> in_cluster_config(const std::map<std::string, std::string>& env,
                                          const std::string& service_account_dir) {
  const auto host = env.find("KUBERNETES_SERVICE_HOST");
  const auto port = env.find("KUBERNETES_SERVICE_PORT");
  if (host == env.end() || host->second.empty() || port == env.end() || port->second.empty()) {
    return Error{"--in-cluster",
                 "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set: not running "
                 "in a pod (use --kubeconfig outside a cluster)"};
  }
  const bool v6 = host->second.find(':') != std::string::npos;
  const std::string url =
      "https://" + (v6 ? "[" + host->second + "]" : host->second) + ":" + port->second;
  auto address = parse_server_url(url, "KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT");
  if (!address) return address.error();
  ClusterConfig config;
  config.source = "in-cluster (" + service_account_dir + ")";
  config.server = std::move(*address);
  config.token_file = service_account_dir + "/token";
  config.ca_file = service_account_dir + "/ca.crt";
  for (const std::string& file : {config.token_file, config.ca_file}) {
    if (::access(file.c_str(), R_OK) != 0) {
      return Error{file, "cannot read the service account's credentials: " +
                             std::error_code(errno, std::generic_category()).message()};
    }
  }
  return config;
}

std::map<std::string, std::string> process_environment() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::size_t eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return env;
}

}  // namespace cudagate::kube
