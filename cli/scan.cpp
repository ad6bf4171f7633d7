// `cudagate scan`: what CUDA code an image holds, read from its files
// (inputs/image_files.h, scan/image_scan.h) or pulled from its registry
// (registry/image_pull.h), printed as text or the contract's JSON, and
// with --attach pushed to the registry as an artifact of the image
// manifest (registry/artifact_push.h).

#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "inputs/image_files.h"
#include "registry/artifact_push.h"
#include "registry/image_pull.h"
#include "registry/scan_attachment.h"
#include "report/scan_report.h"
#include "report/utc_time.h"

namespace cudagate {
namespace {

struct ScanOptions {
  cli::CommonOptions common;
  std::string reference;       // REGISTRY/REPO[:TAG|@DIGEST]
  std::string attach;          // REF: where the scan is pushed
  std::string oci_layout;      // DIR[:REF]
  std::string docker_archive;  // FILE
  std::string rootfs;          // DIR
  std::string platform;        // os/arch[/variant]
  std::string output = "text";
};

// "DIR:REF" split at the last colon after the last slash (a reference never
// holds a slash; a folder may hold a colon).
std::pair<std::string, std::string> layout_and_reference(const std::string& text) {
  const std::size_t slash = text.rfind('/');
  const std::size_t colon = text.rfind(':');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) {
    return {text, ""};
  }
  return {text.substr(0, colon), text.substr(colon + 1)};
}

// Layers pulled from a registry, fed to the scanner as they stream.
class ScanLayers : public LayerVisitor {
 public:
  explicit ScanLayers(scan::ImageScanner& scanner) : scanner_(scanner) {}
  void begin_layer(const std::string& name, const Descriptor&) override {
    scanner_.begin_layer(name);
  }
  bool layer_bytes(std::span<const std::byte> chunk) override {
    scanner_.feed(chunk);
    return true;
  }
  void end_layer(std::optional<Error> problem) override {
    // Named with the layer by the scanner, as its own problems are.
    if (problem) scanner_.add_problem(Error{"", problem->message});
    scanner_.end_layer();
  }

 private:
  scan::ImageScanner& scanner_;
};

Expected<ScannedImage> scan_registry(const RegistrySettings& settings, const std::string& reference,
                                     const std::string& platform) {
  scan::ImageScanner scanner;
  ScanLayers layers(scanner);
  auto pulled = pull_image(settings, reference, platform, layers);
  if (!pulled) return pulled.error();
  ScannedImage out;
  out.source = "registry";
  out.location = reference;
  out.digest = pulled->manifest.digest;
  out.platform = pulled->platform;
  out.scan = scanner.finish();
  return out;
}

// "2025-12-01T10:20:44Z".
std::string rfc3339_now() {
  const auto now = std::chrono::system_clock::now();
  return utc_time_text(
             std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count()) +
         "Z";
}

// Pushes the scan as an artifact of the manifest `options.attach` names
// (for --platform). A scan whose own digest is known must be of that
// manifest; a scan without one (a docker archive, a root file system) is
// recorded as the subject's. `origin` then holds the subject's digest.
void attach_scan(const ScanOptions& options, const RegistrySettings& settings, ScanOrigin& origin,
                 const scan::ImageScan& scan) {
  const auto build = [&](const Descriptor& subject) -> Expected<ArtifactContent> {
    if (!origin.digest.empty() && origin.digest != subject.digest) {
      return Error{"--attach " + quote(options.attach),
                   "the scan is of manifest " + origin.digest + ", and " + options.attach +
                       " names manifest " + subject.digest + " for " +
                       (options.platform.empty() ? std::string("linux/amd64") : options.platform)};
    }
    origin.digest = subject.digest;
    ArtifactContent content;
    content.artifact_type = std::string(kScanArtifactType);
    content.layer_media_type = std::string(kScanArtifactType);
    content.layer = scan_json(origin, scan)
                        .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    content.annotations[std::string(kCreatedAnnotation)] = rfc3339_now();
    content.annotations[std::string(kScanFactsAnnotation)] =
        scan_facts_json(origin, scan)
            .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    return content;
  };
  const AttachedArtifact attached =
      cli::value_or_fail(attach_artifact(settings, options.attach, options.platform, build));
  std::cerr << "cudagate: attached scan " << attached.artifact.digest << " to " << options.attach
            << "@" << attached.subject.digest
            << (attached.referrers_tag.empty()
                    ? std::string(" (listed by the registry's referrers API)")
                    : " (referrers tag " + attached.referrers_tag + ")")
            << '\n';
}

void run_scan(const ScanOptions& options) {
  cli::setup_logging(options.common);
  const int sources =
      static_cast<int>(!options.reference.empty()) + static_cast<int>(!options.oci_layout.empty()) +
      static_cast<int>(!options.docker_archive.empty()) + static_cast<int>(!options.rootfs.empty());
  if (sources != 1) {
    cli::fail(Error{"cudagate scan",
                    "name one image: REGISTRY/REPO[:TAG|@DIGEST], --oci-layout DIR[:REF], "
                    "--docker-archive FILE or --rootfs DIR"});
  }
  // The policy's registry settings, for a pull or a push.
  RegistrySettings settings;
  if (!options.reference.empty() || !options.attach.empty()) {
    const CompatDb db = cli::value_or_fail(cli::load_compat_db_option(options.common));
    settings = cli::value_or_fail(cli::load_policy_option(options.common, db)).registry;
  }
  Expected<ScannedImage> scanned = Error{};
  if (!options.reference.empty()) {
    scanned = scan_registry(settings, options.reference, options.platform);
  } else if (!options.oci_layout.empty()) {
    const auto [dir, reference] = layout_and_reference(options.oci_layout);
    scanned = scan_oci_layout(dir, reference, options.platform);
  } else if (!options.docker_archive.empty()) {
    scanned = scan_docker_archive(options.docker_archive, options.platform);
  } else {
    scanned = scan_rootfs(options.rootfs);
  }
  const ScannedImage image = cli::value_or_fail(std::move(scanned));
  ScanOrigin origin{image.source, image.location, image.digest, image.platform};
  if (!options.attach.empty()) attach_scan(options, settings, origin, image.scan);
  if (options.output == "json") {
    std::cout << scan_json(origin, image.scan)
                     .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
              << '\n';
  } else {
    std::cout << scan_text(origin, image.scan);
  }
}

}  // namespace

void add_scan_command(CLI::App& app) {
  auto options = std::make_shared<ScanOptions>();
  CLI::App* scan = app.add_subcommand(
      "scan", "List the GPU code, CUDA runtime and framework an image's files hold");
  scan->add_option("reference", options->reference,
                   "An image in its registry, REGISTRY/REPO[:TAG|@DIGEST] (registry settings "
                   "from --config)");
  scan->add_option("--attach", options->attach,
                   "Push the scan to the registry as an artifact of the image manifest REF "
                   "names (for --platform)");
  scan->add_option("--oci-layout", options->oci_layout,
                   "An OCI image layout, DIR or DIR:REF (skopeo copy ... oci:DIR:REF)");
  scan->add_option("--docker-archive", options->docker_archive,
                   "A docker save / podman save archive");
  scan->add_option("--rootfs", options->rootfs, "A root file system directory");
  scan->add_option("--platform", options->platform,
                   "os/arch[/variant] to choose in an image index (default linux/amd64)");
  scan->add_option("-o,--output", options->output, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cli::add_common_options(*scan, options->common);
  scan->callback([options] { run_scan(*options); });
}

}  // namespace cudagate
