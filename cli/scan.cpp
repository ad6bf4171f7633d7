// `cudagate scan`: what CUDA code an image holds, read from its files
// (inputs/image_files.h, scan/image_scan.h), printed as text or the
// contract's JSON.

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/common.h"
#include "inputs/image_files.h"
#include "report/scan_report.h"

namespace cudagate {
namespace {

struct ScanOptions {
  cli::CommonOptions common;
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

void run_scan(const ScanOptions& options) {
  cli::setup_logging(options.common);
  const int sources = static_cast<int>(!options.oci_layout.empty()) +
                      static_cast<int>(!options.docker_archive.empty()) +
                      static_cast<int>(!options.rootfs.empty());
  if (sources != 1) {
    cli::fail(
        Error{"cudagate scan",
              "name one image: --oci-layout DIR[:REF], --docker-archive FILE or --rootfs DIR"});
  }
  Expected<ScannedImage> scanned = Error{};
  if (!options.oci_layout.empty()) {
    const auto [dir, reference] = layout_and_reference(options.oci_layout);
    scanned = scan_oci_layout(dir, reference, options.platform);
  } else if (!options.docker_archive.empty()) {
    scanned = scan_docker_archive(options.docker_archive, options.platform);
  } else {
    scanned = scan_rootfs(options.rootfs);
  }
  const ScannedImage image = cli::value_or_fail(std::move(scanned));
  const ScanOrigin origin{image.source, image.location, image.digest, image.platform};
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
