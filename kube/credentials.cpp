// Credentials for the API server: token files re-read when they change, exec
// credential plugins run with posix_spawn and their ExecCredential parsed.
#include "kube/credentials.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

extern char** environ;

namespace cudagate::kube {
namespace {

std::string errno_text(int error) {
  return std::error_code(error, std::generic_category()).message();
}

Expected<std::string> read_whole(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path, "cannot read the " + std::string(what) + ": " + errno_text(errno)};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
    text.pop_back();
  }
  std::size_t start = 0;
  while (start < text.size() && (text[start] == ' ' || text[start] == '\n')) ++start;
  return text.substr(start);
}

// RFC 3339 in UTC or with an offset: 2026-12-01T11:00:00Z, ...T11:00:00.5+01:00.
std::optional<std::int64_t> parse_rfc3339(std::string_view text) {
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  int consumed = 0;
  const std::string s(text);
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                  &second, &consumed) != 6) {
    return std::nullopt;
  }
  std::string_view rest = text.substr(static_cast<std::size_t>(consumed));
  if (rest.starts_with(".")) {
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') rest.remove_prefix(1);
  }
  std::int64_t offset = 0;
  if (rest == "Z" || rest == "z") {
    offset = 0;
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    int oh = 0, om = 0;
    if (std::sscanf(std::string(rest.substr(1)).c_str(), "%2d:%2d", &oh, &om) != 2) {
      return std::nullopt;
    }
    const std::int64_t magnitude = std::int64_t{oh} * 3600 + std::int64_t{om} * 60;
    offset = rest[0] == '+' ? magnitude : -magnitude;
  } else {
    return std::nullopt;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<std::int64_t>(timegm(&tm)) - offset;
}

}  // namespace

Expected<ExecCredential> parse_exec_credential(std::string_view text, std::string_view api_version,
                                               const std::string& where) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Error{where, "expected an ExecCredential as JSON on stdout"};
  }
  auto string_at = [](const nlohmann::json& object, const char* key) -> const std::string* {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
  };
  const std::string* kind = string_at(doc, "kind");
  if (kind == nullptr || *kind != "ExecCredential") {
    return Error{where + ": kind", "expected ExecCredential"};
  }
  const std::string* version = string_at(doc, "apiVersion");
  if (version == nullptr || *version != api_version) {
    return Error{where + ": apiVersion", "expected " + std::string(api_version) +
                                             " as the "
                                             "kubeconfig asks, got " +
                                             (version ? "\"" + *version + "\"" : "none")};
  }
  const auto status = doc.find("status");
  if (status == doc.end() || !status->is_object()) {
    return Error{where + ": status", "is required"};
  }
  ExecCredential out;
  if (const std::string* token = string_at(*status, "token")) out.token = *token;
  if (const std::string* cert = string_at(*status, "clientCertificateData")) {
    out.client_cert_pem = *cert;
  }
  if (const std::string* key = string_at(*status, "clientKeyData")) out.client_key_pem = *key;
  if (out.client_cert_pem.empty() != out.client_key_pem.empty()) {
    return Error{where + ": status", "clientCertificateData and clientKeyData go together"};
  }
  if (out.token.empty() && out.client_cert_pem.empty()) {
    return Error{where + ": status", "has neither a token nor a client certificate"};
  }
  if (const std::string* expiry = string_at(*status, "expirationTimestamp")) {
    out.expires_at = parse_rfc3339(*expiry);
    if (!out.expires_at) {
      return Error{where + ": status.expirationTimestamp",
                   "expected an RFC 3339 time, got \"" + *expiry + "\""};
    }
  }
  return out;
}

Expected<ExecCredential> run_exec_plugin(const ExecPlugin& plugin,
                                         std::chrono::milliseconds timeout) {
  const std::string where = "exec plugin " + plugin.command;
  std::vector<std::string> env_strings;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    bool replaced = text.starts_with("KUBERNETES_EXEC_INFO=");
    for (const auto& [name, value] : plugin.env) {
      replaced = replaced ||
                 (text.starts_with(name) && text.size() > name.size() && text[name.size()] == '=');
    }
    if (!replaced) env_strings.emplace_back(text);
  }
  for (const auto& [name, value] : plugin.env) env_strings.push_back(name + "=" + value);
  std::string exec_info = R"(KUBERNETES_EXEC_INFO={"kind":"ExecCredential","apiVersion":")";
  exec_info += plugin.api_version;
  exec_info += R"(","spec":{"interactive":false}})";
  env_strings.push_back(std::move(exec_info));
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_strings{plugin.command};
  arg_strings.insert(arg_strings.end(), plugin.args.begin(), plugin.args.end());
  std::vector<char*> argv;
  argv.reserve(arg_strings.size() + 1);
  for (std::string& s : arg_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return Error{where, "cannot run: " + errno_text(errno)};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int spawned =
      posix_spawnp(&pid, plugin.command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    return Error{where, "cannot run: " + errno_text(spawned)};
  }

  std::string output;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  constexpr std::size_t kMaxOutput = 1 << 20;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fd{pipe_fds[0], POLLIN, 0};
    const int ready = ::poll(&fd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = ready == 0;
      break;
    }
    char buffer[4096];
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer, static_cast<std::size_t>(n));
    if (output.size() > kMaxOutput) break;
  }
  ::close(pipe_fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return Error{where, "gave no credential within " + std::to_string(timeout.count()) + " ms"};
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error{where, WIFEXITED(status)
                            ? "exited with status " + std::to_string(WEXITSTATUS(status))
                            : "ended by signal " + std::to_string(WTERMSIG(status))};
  }
  return parse_exec_credential(output, plugin.api_version, where);
}

CredentialSource::CredentialSource(ClusterConfig config) : config_(std::move(config)) {}

Expected<Credentials> CredentialSource::current(std::int64_t now) {
  if (!static_) {
    Credentials fixed;
    fixed.ca_pem = config_.ca_pem;
    if (fixed.ca_pem.empty() && !config_.ca_file.empty()) {
      auto ca = read_whole(config_.ca_file, "certificate authority");
      if (!ca) return ca.error();
      fixed.ca_pem = std::move(*ca);
    }
    fixed.client_cert_pem = config_.client_cert_pem;
    if (fixed.client_cert_pem.empty() && !config_.client_cert_file.empty()) {
      auto cert = read_whole(config_.client_cert_file, "client certificate");
      if (!cert) return cert.error();
      fixed.client_cert_pem = std::move(*cert);
    }
    fixed.client_key_pem = config_.client_key_pem;
    if (fixed.client_key_pem.empty() && !config_.client_key_file.empty()) {
      auto key = read_whole(config_.client_key_file, "client key");
      if (!key) return key.error();
      fixed.client_key_pem = std::move(*key);
    }
    fixed.token = config_.token;
    static_ = std::move(fixed);
  }
  Credentials out = *static_;

  if (!config_.token_file.empty()) {
    struct stat st {};
    if (::stat(config_.token_file.c_str(), &st) != 0) {
      return Error{config_.token_file, "cannot read the token: " + errno_text(errno)};
    }
    const std::int64_t mtime_ns =
        static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    if (mtime_ns != token_mtime_ns_ || static_cast<std::int64_t>(st.st_size) != token_size_ ||
        file_token_.empty()) {
      auto token = read_whole(config_.token_file, "token");
      if (!token) return token.error();
      file_token_ = trim(std::move(*token));
      token_mtime_ns_ = mtime_ns;
      token_size_ = static_cast<std::int64_t>(st.st_size);
      if (file_token_.empty()) return Error{config_.token_file, "the token file is empty"};
    }
    out.token = file_token_;
  }

  if (config_.exec) {
    if (exec_ && exec_->expires_at && *exec_->expires_at <= now) exec_.reset();
    if (!exec_) {
      auto credential = run_exec_plugin(*config_.exec, kExecTimeout);
      if (!credential) return credential.error();
      exec_ = std::move(*credential);
    }
    if (!exec_->token.empty()) out.token = exec_->token;
    if (!exec_->client_cert_pem.empty()) {
      out.client_cert_pem = exec_->client_cert_pem;
      out.client_key_pem = exec_->client_key_pem;
    }
  }
  return out;
}

bool CredentialSource::exec_due(std::int64_t now) const {
  return config_.exec && (!exec_ || (exec_->expires_at && *exec_->expires_at <= now));
}

void CredentialSource::invalidate() {
  exec_.reset();
  token_mtime_ns_ = -1;
  token_size_ = -1;
}

}  // namespace cudagate::kube
