#pragma once
// Dynamic Resource Allocation (resource.k8s.io): GPUs published by NVIDIA's
// DRA driver in ResourceSlices, and pods that claim them through
// spec.resourceClaims instead of an nvidia.com/gpu limit.
//
// ResourceSlices become node facts: each node's devices of the driver
// gpu.nvidia.com, grouped into kinds (Node::devices), and per kind an
// allocatable entry (dra_resource_name) that candidate selection counts as
// it counts extended resources. ResourceClaims and ResourceClaimTemplates
// become the device requests of the pods that name them; a request's CEL
// selectors are evaluated on a device kind where they are written in the
// subset policy/objects/dra_selector.h reads, else the request is judged as able to
// take any device of its class, and the decision says which.
//
// resource.k8s.io/v1 (Kubernetes 1.34+), v1beta2 (1.33) and v1beta1 (1.32)
// objects are read; other versions are refused with an error that names
// the version.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "policy/objects/dra_selector.h"
#include "policy/objects/node.h"
#include "policy/objects/pod.h"
#include "types/expected.h"

namespace cudagate {

inline constexpr std::string_view kResourceGroup = "resource.k8s.io";

// Whether `api_version` is a resource.k8s.io version cudagate reads.
[[nodiscard]] bool is_dra_api_version(std::string_view api_version);

// One device of a ResourceSlice; attribute names fully qualified, sorted.
struct SliceDevice {
  std::string name;
  std::vector<DeviceAttribute> attributes;
};

struct ResourceSlice {
  std::string name;
  std::string node_name;  // "" for slices of devices not local to one node
  std::string driver;
  std::string pool;
  std::int64_t pool_generation = 0;
  std::vector<SliceDevice> devices;
};

// A ResourceSlice object (`where` names it in errors).
Expected<ResourceSlice> resource_slice_from_json(const nlohmann::json& object,
                                                 std::string_view where);

// The kinds of devices of NVIDIA's driver on each node: the slices of each
// pool's newest generation only (older ones are being replaced), devices
// with equal attributes counted as one kind once the attributes that name
// one device (uuid, parentUUID, PCI addresses) are left out.
[[nodiscard]] std::map<std::string, std::vector<DeviceKind>, std::less<>> device_kinds_by_node(
    const std::vector<ResourceSlice>& slices);

// The allocatable entry of a kind's devices: "dra:gpu.nvidia.com:gpu".
// Not a valid resource name, so that no real resource can collide with it.
[[nodiscard]] std::string dra_resource_name(std::string_view driver, std::string_view type);
// Whether an allocatable entry is one of those.
[[nodiscard]] bool is_dra_resource(std::string_view name);

// Sets `node`'s devices to `kinds`, and its DRA allocatable entries (one
// per driver and type, and one for every device of the driver, type "*").
void attach_devices(Node& node, std::vector<DeviceKind> kinds);

// Which devices a device class selects: NVIDIA's classes gpu.nvidia.com,
// mig.nvidia.com and vfio.gpu.nvidia.com select the driver's devices of
// one type (their DeviceClass selectors say so); any other class listed in
// the policy's draDeviceClasses is taken to select every device of the
// driver, type "*".
struct ClassDevices {
  std::string driver;
  std::string type;  // "gpu", "mig", "vfio" or "*"
};
[[nodiscard]] ClassDevices class_devices(std::string_view device_class);

// A device request of a claim: `exactly` one way, or `firstAvailable` ways
// in order of preference.
struct DeviceRequestWay {
  std::string device_class;
  std::int64_t count = 1;              // allocationMode ExactCount's count
  bool all = false;                    // allocationMode All
  std::vector<std::string> selectors;  // CEL expressions, ANDed
};
struct DeviceRequest {
  std::string name;
  std::vector<DeviceRequestWay> ways;
};

// A ResourceClaim's or ResourceClaimTemplate's device requests.
struct ClaimSpec {
  ResourceRef resource;  // kind ResourceClaim or ResourceClaimTemplate
  std::vector<DeviceRequest> requests;
  // The object as written, where it came from a manifest (parse_claims):
  // what `cudagate check -o claims` adds selectors to.
  nlohmann::json object;
};

// A ResourceClaim or ResourceClaimTemplate object. `where` names it.
Expected<ClaimSpec> claim_from_json(const nlohmann::json& object, std::string_view where);

// Whether `kind` is ResourceClaim or ResourceClaimTemplate.
[[nodiscard]] bool is_claim_kind(std::string_view kind);

// The claims and templates pods may name, by namespace and name.
class ClaimCatalog {
 public:
  void add(ClaimSpec claim);
  // Removes the object; false when there was none.
  bool remove(std::string_view kind, std::string_view namespace_, std::string_view name);
  [[nodiscard]] const ClaimSpec* find(std::string_view kind, std::string_view namespace_,
                                      std::string_view name) const;
  [[nodiscard]] std::size_t size() const { return claims_.size(); }

 private:
  static std::string key(std::string_view kind, std::string_view namespace_, std::string_view name);
  std::map<std::string, ClaimSpec, std::less<>> claims_;
};

// Every ResourceClaim and ResourceClaimTemplate in a JSON or YAML text
// (single objects, several documents, Lists); other kinds are skipped.
Expected<std::vector<ClaimSpec>> parse_claims(std::string_view text, std::string_view source);

// What a pod's claims ask for, as evaluate() needs it.
struct ClaimUse {
  // Per container of the workload's spec (same order): whether it uses a
  // claim that requests devices of a GPU device class.
  std::vector<bool> gpu;
  // One per GPU request: the class's devices and the request's selectors.
  struct Request {
    std::string label;  // "claim gpu (ResourceClaimTemplate team-a/h100), request gpu"
    ClassDevices devices;
    std::int64_t count = 1;
    std::vector<DraSelector> selectors;
    bool exact = true;  // every selector was read; else any device of the class
  };
  std::vector<Request> requests;
  // Pod claims that name a claim or template cudagate does not have.
  std::vector<std::string> missing;
  // For the decision: how each request was judged.
  std::vector<std::string> notes;
};

// The claims `spec` names, looked up in `catalog` (null: none known) in
// the workload's namespace. `gpu_classes` is the policy's draDeviceClasses.
[[nodiscard]] ClaimUse claim_use(const PodSpec& spec, std::string_view namespace_,
                                 const ClaimCatalog* catalog,
                                 const std::vector<std::string>& gpu_classes);

// Whether a kind is one of the devices `request` may be given: of its
// class, and not excluded by a selector that evaluates to false.
[[nodiscard]] bool may_take(const ClaimUse::Request& request, const DeviceKind& kind);

}  // namespace cudagate
