#pragma once
// The decision record (docs/contract.md §7.1): the verdict over a
// workload's candidate nodes, the metadata used with its sources, and per
// group of nodes with equal GPU facts the outcome and the findings, each
// with a fix.

#include <array>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "policy/objects/node.h"
#include "policy/objects/pod.h"
#include "policy/rules/rule.h"

namespace cudagate {

enum class Verdict : unsigned char { pass, partial, fail, unknown, no_candidates, skip };
enum class Outcome : unsigned char { compatible, incompatible, unknown };

[[nodiscard]] std::string_view to_string(Verdict verdict);  // "no-candidates"
[[nodiscard]] std::string_view to_string(Outcome outcome);

// The fix of an unknown finding whose cause is a gap in the compatibility
// matrix (a driver branch, product, CUDA release or compute capability
// newer than it knows); such a finding's fix starts with it.
inline constexpr std::string_view kFixUpdateMatrix = "update cudagate or give --compat-db";

struct Finding {
  Rule rule = Rule::cuda_driver;
  std::string container;  // container name
  std::string message;    // "needs CUDA 12.4; driver 535.129.03 supports up to CUDA 12.2"
  std::string fix;        // "upgrade the driver to 550.54.14 or newer, or ..."
  bool unknown = false;   // true when the finding says a value is missing, not that a rule failed

  // An unknown that a newer matrix would answer.
  [[nodiscard]] bool matrix_gap() const {
    return unknown && std::string_view(fix).starts_with(kFixUpdateMatrix);
  }

  friend bool operator==(const Finding&, const Finding&) = default;
};

struct SourcedValue {
  std::string value;  // "" when unknown
  std::string source = "unknown";

  friend bool operator==(const SourcedValue&, const SourcedValue&) = default;
};

struct ContainerDecision {
  std::string name;
  std::string image;
  bool gpu = false;
  SourcedValue cuda;
  SourcedValue archs;
  SourcedValue require;
  SourcedValue min_cc;

  friend bool operator==(const ContainerDecision&, const ContainerDecision&) = default;
};

inline constexpr std::size_t kMaxGroupNodeNames = 20;

// The names of a group's nodes in a decision. evaluate() fills it with views
// of the inventory's own strings, so that a decision copies none of them;
// the Decision holds those strings (Decision::node_name_storage). Names
// given as strings (a list built by hand) are owned, and copies share them.
// Up to kMaxGroupNodeNames views are kept without allocating.
class NodeNames {
 public:
  using value_type = std::string_view;
  using const_iterator = const std::string_view*;
  using iterator = const_iterator;
  using size_type = std::size_t;

  NodeNames() = default;
  NodeNames(std::initializer_list<std::string_view> names);
  NodeNames(std::vector<std::string> names);  // NOLINT: implicit, as the list it replaces

  // Adds a view: `name` must stay valid as long as this list and its copies.
  void push_back(std::string_view name) {
    if (more_.empty() && size_ < inline_.size()) {
      inline_[size_++] = name;
      return;
    }
    if (more_.empty()) more_.assign(inline_.begin(), inline_.end());
    more_.push_back(name);
    ++size_;
  }
  void clear() {
    size_ = 0;
    more_.clear();
    owned_.reset();
  }

  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] std::string_view operator[](std::size_t i) const { return data()[i]; }
  [[nodiscard]] std::string_view front() const { return data()[0]; }
  [[nodiscard]] std::string_view back() const { return data()[size_ - 1]; }
  [[nodiscard]] const_iterator begin() const { return data(); }
  [[nodiscard]] const_iterator end() const { return data() + size_; }

  friend bool operator==(const NodeNames& a, const NodeNames& b);
  friend bool operator==(const NodeNames& a, const std::vector<std::string>& b);

 private:
  [[nodiscard]] const std::string_view* data() const {
    return more_.empty() ? inline_.data() : more_.data();
  }

  std::array<std::string_view, kMaxGroupNodeNames> inline_{};
  std::size_t size_ = 0;
  std::vector<std::string_view> more_;  // every view, once they do not fit inline
  // The strings the views point into when they are not the inventory's
  // (never changed once made, so that the views stay valid in copies).
  std::shared_ptr<const std::vector<std::string>> owned_;
};

struct GroupDecision {
  std::size_t group = 0;  // index into Inventory::groups()
  std::size_t count = 0;  // candidate members of the group
  NodeNames nodes;        // at most kMaxGroupNodeNames names
  GpuFacts facts;
  Outcome outcome = Outcome::compatible;
  std::vector<Finding> findings;

  friend bool operator==(const GroupDecision&, const GroupDecision&) = default;
};

struct Decision {
  ResourceRef resource;
  Verdict verdict = Verdict::skip;
  std::string reason;  // for skip and no-candidates: why
  std::vector<ContainerDecision> containers;
  std::size_t candidates = 0;
  std::size_t compatible = 0;
  std::vector<GroupDecision> groups;  // incompatible and unknown first, then compatible
  bool unknown_image = false;         // a GPU container has neither cuda, archs nor require
  bool unknown_node = false;          // a candidate GPU node's driver is unknown
  bool unknown_claim = false;         // a pod claim names a claim cudagate does not know
  // How each request of the pod's DRA claims was judged (selectors
  // evaluated or not), and the claims it could not find.
  std::vector<std::string> claims;
  // The devices the claims request, as requests of the DRA allocatable
  // entries (dra_resource_name) of container `device_container`: what
  // candidate selection adds to the pod spec's requests (added_requests()).
  std::vector<std::pair<std::string, std::int64_t>> device_requests;
  std::size_t device_container = 0;
  // Warnings that change no verdict, each once: where an image's scan and
  // its variables disagree, files of a scan that are not counted and lack
  // kernels for a candidate (policy/rules/scanned_files.h).
  std::vector<std::string> notes;
  // What the groups' node names view when evaluate() made them (the
  // inventory's strings): held here, the names stay valid as long as this
  // decision or a copy of it, whatever becomes of the inventory. A
  // GroupDecision copied out of a decision does not hold it.
  std::shared_ptr<const void> node_name_storage;

  // Equal when every value is: which strings the node names view (and so
  // node_name_storage) does not count. A field added above is compared there
  // too (tests/policy/rules/decision_test.cpp changes each one).
  friend bool operator==(const Decision& a, const Decision& b);
};

}  // namespace cudagate
