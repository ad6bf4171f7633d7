// Reading input files with POSIX calls, so that a read error is reported
// with its errno text and stdin is read the same way as a file.
#include "inputs/input_files.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "policy/objects/node.h"

namespace cudagate {

std::string display_name(std::string_view path) {
  return path == "-" ? std::string("<stdin>") : std::string(path);
}

Expected<std::string> read_input(const std::string& path) {
  const bool is_stdin = path == "-";
  const int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Error{display_name(path), std::string("cannot read: ") + std::strerror(errno)};
  }
  std::string content;
  char buffer[65536];
  int read_errno = 0;
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      content.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      read_errno = errno;
      break;
    }
  }
  if (!is_stdin) ::close(fd);
  if (read_errno != 0) {
    return Error{display_name(path), std::string("cannot read: ") + std::strerror(read_errno)};
  }
  return content;
}

Expected<CompatDb> load_compat_db_file(const std::string& path) {
  if (path.empty()) return load_compat_db(embedded_compat_db_files());
  auto text = read_input(path);
  if (!text) return text.error();
  return load_compat_db({CompatDbFile{display_name(path), *text}});
}

Expected<Policy> load_policy_file(const std::string& path, const CompatDb& db) {
  if (path.empty()) return Policy{};
  auto text = read_input(path);
  if (!text) return text.error();
  return parse_policy(*text, display_name(path), db);
}

Expected<Inventory> load_inventory_file(const std::string& path, const CompatDb& db) {
  auto text = read_input(path);
  if (!text) return text.error();
  auto nodes = parse_nodes(*text, display_name(path), &db);
  if (!nodes) return nodes.error();
  spdlog::debug("read {} nodes from {}", nodes->size(), display_name(path));
  return Inventory::build(std::move(nodes).value(), db);
}

Expected<std::vector<ClaimSpec>> claims_in_text(std::string_view text, std::string_view source) {
  if (text.find("ResourceClaim") == std::string_view::npos) return std::vector<ClaimSpec>();
  return parse_claims(text, source);
}

Expected<std::vector<Workload>> load_workloads_file(const std::string& path,
                                                    std::vector<ClaimSpec>* claims) {
  auto text = read_input(path);
  if (!text) return text.error();
  auto workloads = parse_workloads(*text, display_name(path));
  if (!workloads) return workloads.error();
  if (claims != nullptr) {
    auto found = claims_in_text(*text, display_name(path));
    if (!found) return found.error();
    const bool any = !found->empty();
    claims->insert(claims->end(), std::make_move_iterator(found->begin()),
                   std::make_move_iterator(found->end()));
    if (any) return workloads;
  }
  if (workloads->empty()) {
    return Error{display_name(path),
                 "expected a Pod, Deployment, ReplicaSet, StatefulSet, DaemonSet, Job or CronJob, "
                 "found none"};
  }
  return workloads;
}

}  // namespace cudagate
