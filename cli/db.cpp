// `cudagate db show` prints the compatibility matrix (embedded, or the
// --compat-db file) as tables for a person or as one JSON document in the
// input files' shape; `cudagate db lint FILE...` validates matrix files.

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstddef>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "compat-db/compat_db_json.h"

namespace cudagate {
namespace {

struct ShowOptions {
  cli::CommonOptions common;
  std::string output = "text";
};

struct LintOptions {
  cli::CommonOptions common;
  std::vector<std::string> files;
};

// A plain-text table: columns padded to their widest cell, header in bold.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  void print(std::ostream& out, const cli::Paint& paint) const {
    std::vector<std::size_t> width(header_.size(), 0);
    auto measure = [&width](const std::vector<std::string>& row) {
      for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) {
        width[i] = std::max(width[i], row[i].size());
      }
    };
    measure(header_);
    for (const auto& row : rows_) measure(row);
    auto line = [&](const std::vector<std::string>& row, bool header) {
      std::string text = "  ";
      for (std::size_t i = 0; i < row.size(); ++i) {
        const bool last = i + 1 == row.size();
        std::string cell = row[i];
        if (!last) cell.resize(width[i] + 2, ' ');
        text += cell;
      }
      while (!text.empty() && text.back() == ' ') text.pop_back();
      out << (header ? paint.bold(text) : text) << '\n';
    };
    line(header_, true);
    for (const auto& row : rows_) line(row, false);
  }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Numbers the sources of one section, so that a table cites "[2]" and the
// long source texts are printed once below it.
class Sources {
 public:
  std::string cite(const std::string& source) {
    auto [it, inserted] = index_.emplace(source, order_.size() + 1);
    if (inserted) order_.push_back(source);
    return "[" + std::to_string(it->second) + "]";
  }

  void print(std::ostream& out, const cli::Paint& paint) const {
    if (order_.empty()) return;
    out << "  " << paint.dim("sources:") << '\n';
    for (std::size_t i = 0; i < order_.size(); ++i) {
      out << "    [" << i + 1 << "] " << order_[i] << '\n';
    }
  }

 private:
  std::map<std::string, std::size_t> index_;
  std::vector<std::string> order_;
};

std::string join(const std::vector<std::string>& values, const char* separator = ", ") {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : separator) + v;
  return out;
}

std::string join_cc(const std::vector<ComputeCapability>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : " ") + v.str();
  return out;
}

void section(std::ostream& out, const cli::Paint& paint, const std::string& title,
             std::size_t count, const Table& table, const Sources& sources) {
  out << '\n' << paint.bold(title) << " (" << count << ")\n";
  table.print(out, paint);
  sources.print(out, paint);
}

// The matrix's driver side: CUDA releases and their drivers, minor version
// compatibility, driver branches and the targets of each CUDA release.
void print_driver_tables(std::ostream& out, const cli::Paint& paint, const CompatDb& db) {
  {
    Table table({"CUDA", "RELEASE", "MIN DRIVER (LINUX X86_64)", "SOURCE"});
    Sources sources;
    for (const auto& r : db.cuda_releases) {
      table.add({r.version, r.label, r.min_driver.str(), sources.cite(r.source)});
    }
    section(out, paint, "CUDA releases and the oldest driver each runs on", db.cuda_releases.size(),
            table, sources);
  }
  {
    Table table({"CUDA MAJOR", "MIN DRIVER", "SOURCE"});
    Sources sources;
    for (const auto& m : db.minor_version_compat) {
      table.add({std::to_string(m.cuda_major) + ".x", m.min_driver.str(), sources.cite(m.source)});
    }
    section(out, paint, "Minor version compatibility", db.minor_version_compat.size(), table,
            sources);
  }
  {
    Table table({"BRANCH", "REPORTS CUDA", "DESIGNATION", "SOURCE", "END OF LIFE"});
    Sources sources;
    for (const auto& b : db.driver_branches) {
      table.add({"R" + std::to_string(b.branch), b.cuda.str(), b.designation,
                 sources.cite(b.source), b.end_of_life});
    }
    section(out, paint, "Driver branches", db.driver_branches.size(), table, sources);
  }
  {
    Table table({"FAMILY", "LAST BRANCH", "SOURCE", "COMPUTE CAPABILITIES"});
    Sources sources;
    for (const auto& l : db.last_driver_branches) {
      table.add({l.family, "R" + std::to_string(l.last_branch), sources.cite(l.source),
                 join_cc(l.capabilities)});
    }
    section(out, paint, "The last driver branch of each GPU architecture",
            db.last_driver_branches.size(), table, sources);
  }
  {
    Table table({"SINCE CUDA", "ALL", "ALL-MAJOR", "SOURCE", "A TARGETS", "F TARGETS"});
    Sources sources;
    for (const auto& t : db.cuda_targets) {
      table.add({t.since.str(), join_cc(t.all), join_cc(t.all_major), sources.cite(t.source),
                 join_cc(t.arch_specific), join_cc(t.family_specific)});
    }
    section(out, paint, "Compute capabilities each CUDA release can target", db.cuda_targets.size(),
            table, sources);
  }
}

// The matrix's GPU side: products, cloud labels, named architectures, Tegra.
void print_gpu_tables(std::ostream& out, const cli::Paint& paint, const CompatDb& db) {
  {
    Table table({"PRODUCT", "CC", "FAMILY", "BRAND", "DATACENTER", "SOURCE", "ALSO MATCHES"});
    Sources sources;
    for (const auto& p : db.products) {
      std::vector<std::string> names = p.aliases;
      names.insert(names.end(), p.gfd_names.begin(), p.gfd_names.end());
      for (const auto& prefix : p.gfd_prefixes) names.push_back(prefix + "*");
      table.add({p.name, p.cc.str(), p.family, p.brand, p.datacenter ? "yes" : "no",
                 sources.cite(p.source), join(names)});
    }
    section(out, paint, "GPU products", db.products.size(), table, sources);
  }
  {
    Table table({"LABEL", "VALUE", "PRODUCT", "SOURCE"});
    Sources sources;
    for (const auto& c : db.cloud_accelerators) {
      table.add({c.label, c.value, c.product, sources.cite(c.source)});
    }
    section(out, paint, "Cloud accelerator labels", db.cloud_accelerators.size(), table, sources);
  }
  {
    Table table({"NAME", "TORCH_CUDA_ARCH_LIST", "CUDA", "SOURCE"});
    Sources sources;
    for (const auto& a : db.architectures) {
      std::string cuda;
      if (a.cuda_since) cuda = a.cuda_since->str() + "+";
      if (a.cuda_before) cuda += (cuda.empty() ? "before " : ", before ") + a.cuda_before->str();
      table.add({a.name, a.arch_list, cuda.empty() ? "any" : cuda, sources.cite(a.source)});
    }
    section(out, paint, "Named architectures", db.architectures.size(), table, sources);
  }
  {
    Table table({"CC", "DEVICES", "SOURCE"});
    Sources sources;
    for (const auto& t : db.tegra) table.add({t.cc.str(), t.devices, sources.cite(t.source)});
    section(out, paint, "Tegra capabilities (SASS runs only on exactly its own capability)",
            db.tegra.size(), table, sources);
  }
}

// The matrix's image side: nvidia/cuda and NGC images, inference rules, PyTorch's builds.
void print_image_tables(std::ostream& out, const cli::Paint& paint, const CompatDb& db) {
  {
    Table table({"CUDA_VERSION", "SOURCE", "NVIDIA_REQUIRE_CUDA"});
    Sources sources;
    for (const auto& i : db.cuda_images) {
      table.add(
          {i.cuda_version, sources.cite(i.source), cli::summarise_requirement(i.require_cuda)});
    }
    section(out, paint, "nvidia/cuda images", db.cuda_images.size(), table, sources);
  }
  {
    Table table({"RELEASE", "CUDA", "PYTORCH", "MIN DRIVER", "MIN CC", "SOURCE",
                 "FORWARD COMPATIBLE DRIVERS"});
    Sources sources;
    for (const auto& n : db.ngc_releases) {
      std::vector<std::string> forward;
      for (const auto& d : n.forward_compat) forward.push_back(d.str() + "+");
      table.add({n.release, n.cuda_version, n.pytorch_version,
                 n.min_driver ? n.min_driver->str() : "", n.min_cc ? n.min_cc->str() : "",
                 sources.cite(n.source), join(forward)});
    }
    section(out, paint, "NGC framework releases (nvcr.io/nvidia/pytorch:YY.MM-py3 and siblings)",
            db.ngc_releases.size(), table, sources);
  }
  {
    Table table({"KIND", "SOURCE", "REPOSITORIES"});
    Sources sources;
    for (const auto& r : db.image_rules) {
      table.add({r.kind, sources.cite(r.source), join(r.repositories)});
    }
    section(out, paint, "Image inference rules", db.image_rules.size(), table, sources);
  }
  {
    Table table({"VARIANT", "CUDA", "TORCH", "SOURCE", "TORCH_CUDA_ARCH_LIST"});
    Sources sources;
    for (const auto& t : db.torch_builds) {
      const std::string torch =
          t.torch_since.str() + (t.torch_before ? " to before " + t.torch_before->str() : "+");
      table.add({t.cuda_variant, t.cuda.str(), torch, sources.cite(t.source), t.arch_list});
    }
    section(out, paint, "PyTorch's own builds (wheels and pytorch/pytorch images)",
            db.torch_builds.size(), table, sources);
  }
}

void print_db_text(std::ostream& out, const CompatDb& db, const std::string& origin) {
  const cli::Paint paint(cli::stdout_wants_colour());
  out << "compat-db revision " << db.revision << " (" << origin << "), as of "
      << (db.as_of.empty() ? std::string("an unknown date") : db.as_of) << '\n';
  for (const auto& [what, entry] : newest_entries(db)) {
    out << "  newest " << what << ": " << entry << '\n';
  }
  print_driver_tables(out, paint, db);
  print_gpu_tables(out, paint, db);
  print_image_tables(out, paint, db);
}

std::string counts(const CompatDb& db) {
  auto n = [](std::size_t count, const char* what) { return std::to_string(count) + " " + what; };
  return join(
      {n(db.cuda_releases.size(), "CUDA releases"),
       n(db.minor_version_compat.size(), "minor-version ranges"),
       n(db.driver_branches.size(), "driver branches"), n(db.cuda_targets.size(), "target sets"),
       n(db.products.size(), "products"), n(db.cloud_accelerators.size(), "cloud labels"),
       n(db.architectures.size(), "architectures"), n(db.tegra.size(), "Tegra capabilities"),
       n(db.cuda_images.size(), "nvidia/cuda images"), n(db.ngc_releases.size(), "NGC releases"),
       n(db.image_rules.size(), "image rules"),
       n(db.last_driver_branches.size(), "architecture support ends"),
       n(db.torch_builds.size(), "PyTorch builds")});
}

void run_show(const ShowOptions& options) {
  cli::setup_logging(options.common);
  const CompatDb db = cli::value_or_fail(cli::load_compat_db_option(options.common));
  if (options.output == "json") {
    std::cout << compat_db_to_json(db).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << '\n';
    return;
  }
  print_db_text(std::cout, db,
                options.common.compat_db.empty() ? std::string("embedded")
                                                 : display_name(options.common.compat_db));
}

void run_lint(const LintOptions& options) {
  cli::setup_logging(options.common);
  // The texts must outlive load_compat_db(), which reads them as views.
  std::vector<std::string> texts;
  texts.reserve(options.files.size());
  std::vector<CompatDbFile> files;
  std::string names;
  for (const auto& path : options.files) {
    texts.push_back(cli::value_or_fail(read_input(path)));
    files.push_back(CompatDbFile{display_name(path), texts.back()});
    names += (names.empty() ? "" : ", ") + display_name(path);
  }
  const CompatDb db = cli::value_or_fail(load_compat_db(files));
  std::cout << names << ": ok (" << counts(db) << ")\n";
}

}  // namespace

void add_db_command(CLI::App& app) {
  CLI::App* db =
      app.add_subcommand("db", "Show the compatibility matrix or validate a matrix file");
  db->require_subcommand(1);

  auto show_options = std::make_shared<ShowOptions>();
  CLI::App* show = db->add_subcommand(
      "show", "Print the compatibility matrix (the embedded one, or the --compat-db file)");
  show->add_option("-o,--output", show_options->output,
                   "Output format; json is the input files' shape, accepted by db lint and "
                   "--compat-db")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cli::add_common_options(*show, show_options->common);
  show->callback([show_options] { run_show(*show_options); });

  auto lint_options = std::make_shared<LintOptions>();
  CLI::App* lint = db->add_subcommand(
      "lint",
      "Validate matrix files: together they must hold every section (exit 0 ok, 2 invalid)");
  lint->add_option("FILE", lint_options->files, "Matrix files (JSON; '-' for stdin)")->required();
  cli::add_common_options(*lint, lint_options->common);
  lint->callback([lint_options] { run_lint(*lint_options); });
}

}  // namespace cudagate
