// An image's layers streamed through decompression and tar into the facts
// of its files, layered as the image's file system is.
#include "scan/image_scan.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "scan/decompressor.h"
#include "scan/gpu_code.h"
#include "scan/layered_files.h"
#include "types/quote.h"

namespace cudagate::scan {
namespace {

// What one file states; a file may state several things (libcudart is an
// ELF file too).
struct FileFacts {
  std::vector<GpuArch> sass;
  std::vector<GpuArch> ptx;
  std::optional<std::string> cudart;
  std::optional<std::string> compat;
  std::optional<Framework> torch;
  [[nodiscard]] bool empty() const {
    return sass.empty() && ptx.empty() && !cudart && !compat && !torch;
  }
};

// torch/version.py is a few hundred bytes; anything far larger is no such file.
constexpr std::uint64_t kMaxVersionFileBytes = std::uint64_t{64} * 1024;

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_torch_version_file(std::string_view path) {
  return path == "torch/version.py" || path.ends_with("/torch/version.py");
}

// "12.4.127" when `text` is 2 to `max_parts` dot-separated numbers.
std::optional<std::string> dotted_number(std::string_view text, int max_parts) {
  int parts = 1;
  bool digit = false;
  for (const char c : text) {
    if (c == '.') {
      if (!digit) return std::nullopt;
      ++parts;
      digit = false;
    } else if (c >= '0' && c <= '9') {
      digit = true;
    } else {
      return std::nullopt;
    }
  }
  if (!digit || parts < 2 || parts > max_parts) return std::nullopt;
  return std::string(text);
}

// Orders "12.4.127" and "12.10" as versions, part by part.
bool older_version(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() || j < b.size()) {
    unsigned long x = 0;
    unsigned long y = 0;
    for (; i < a.size() && a[i] != '.'; ++i) x = x * 10 + static_cast<unsigned long>(a[i] - '0');
    for (; j < b.size() && b[j] != '.'; ++j) y = y * 10 + static_cast<unsigned long>(b[j] - '0');
    if (x != y) return x < y;
    ++i;
    ++j;
  }
  return false;
}

// The quoted value after `=` on a line of Python ('x' or "x"), "" for None.
std::optional<std::string> python_string_value(std::string_view line) {
  const std::size_t equals = line.find('=');
  if (equals == std::string_view::npos) return std::nullopt;
  std::string_view value = line.substr(equals + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  if (value.starts_with("None")) return std::string();
  if (value.empty() || (value.front() != '\'' && value.front() != '"')) return std::nullopt;
  const char quote_char = value.front();
  const std::size_t end = value.find(quote_char, 1);
  if (end == std::string_view::npos) return std::nullopt;
  return std::string(value.substr(1, end - 1));
}

}  // namespace

bool needs_content(const std::string& path, Bytes head) {
  if (is_torch_version_file(path)) return true;
  return head.size() >= 4 && head[0] == std::byte{0x7f} && head[1] == std::byte{'E'} &&
         head[2] == std::byte{'L'} && head[3] == std::byte{'F'};
}

std::optional<std::string> cuda_runtime_of(const std::string& path) {
  const std::string_view base = base_name(path);
  static constexpr std::string_view kCudart = "libcudart.so.";
  if (base.starts_with(kCudart)) return dotted_number(base.substr(kCudart.size()), 3);
  // nvidia/cuda_runtime's wheel: ".../nvidia_cuda_runtime_cu12-12.4.127.dist-info/METADATA".
  if (base != "METADATA") return std::nullopt;
  const std::string_view folder = std::string_view(path).substr(0, path.size() - base.size() - 1);
  const std::string_view dist = base_name(folder);
  static constexpr std::string_view kWheel = "nvidia_cuda_runtime";
  static constexpr std::string_view kDistInfo = ".dist-info";
  if (!dist.starts_with(kWheel) || !dist.ends_with(kDistInfo)) return std::nullopt;
  const std::size_t dash = dist.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::string_view suffix = dist.substr(kWheel.size(), dash - kWheel.size());
  if (!suffix.empty() && !suffix.starts_with("_cu")) return std::nullopt;
  return dotted_number(dist.substr(dash + 1, dist.size() - kDistInfo.size() - dash - 1), 4);
}

std::optional<std::string> compat_driver_of(const std::string& path) {
  const std::string_view base = base_name(path);
  static constexpr std::string_view kLibcuda = "libcuda.so.";
  if (!base.starts_with(kLibcuda)) return std::nullopt;
  const std::string_view folder = std::string_view(path).substr(
      0, path.size() > base.size() ? path.size() - base.size() - 1 : 0);
  if (base_name(folder) != "compat") return std::nullopt;
  return dotted_number(base.substr(kLibcuda.size()), 3);
}

std::optional<Framework> torch_of(const std::string& path, std::string_view text) {
  Framework torch;
  torch.name = "pytorch";
  torch.path = path;
  bool has_version = false;
  while (!text.empty()) {
    const std::size_t newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (line.starts_with("__version__")) {
      if (auto value = python_string_value(line); value && !value->empty()) {
        torch.version = std::move(*value);
        has_version = true;
      }
    } else if (line.starts_with("cuda") &&
               (line.size() == 4 || line[4] == ' ' || line[4] == ':' || line[4] == '=')) {
      if (auto value = python_string_value(line)) torch.cuda = std::move(*value);
    }
  }
  if (!has_version) return std::nullopt;
  return torch;
}

struct ImageScanner::State : TarVisitor {
  ImageScanLimits limits;
  LayeredFiles<FileFacts> files;
  ImageScan out;

  // The layer being read.
  std::string layer;
  std::vector<std::byte> head;  // its first bytes, until the compression is known
  std::unique_ptr<Decompressor> decompressor;
  std::unique_ptr<TarReader> tar;
  bool layer_failed = false;

  // The member being read.
  std::string path;
  std::uint64_t size = 0;
  FileFacts facts;
  std::vector<std::byte> content;
  bool holding = false;  // content_ is being kept

  void problem(const std::string& where, std::string message) {
    out.problems.push_back(Error{where.empty() ? layer : layer + ": " + where, std::move(message)});
  }

  // The facts a file's name states.
  FileFacts name_facts(const std::string& file) const {
    FileFacts f;
    f.cudart = cuda_runtime_of(file);
    f.compat = compat_driver_of(file);
    return f;
  }

  void read_content(const std::string& file, Bytes bytes, FileFacts& into) {
    if (is_torch_version_file(file)) {
      into.torch = torch_of(
          file, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
      return;
    }
    ++out.elf_files;
    GpuCode code = read_gpu_code(bytes, limits.code);
    into.sass = std::move(code.sass);
    into.ptx = std::move(code.ptx);
    for (const Error& error : code.errors) problem(quote(file, 256), error.str());
  }

  bool on_entry(const TarEntry& entry) override {
    if (!files.entry(entry.path, entry.type == TarEntry::Type::directory)) return false;
    if (entry.type == TarEntry::Type::hardlink) {
      // The same file under a second name: the same facts.
      if (const FileFacts* target = files.find(entry.link)) files.put(entry.path, *target);
      return false;
    }
    if (entry.type != TarEntry::Type::file) return false;
    path = entry.path;
    size = entry.size;
    facts = name_facts(path);
    content.clear();
    holding = size >= 4 && (!is_torch_version_file(path) || size <= kMaxVersionFileBytes);
    if (!holding && !facts.empty()) files.put(path, std::move(facts));
    return holding;
  }

  void on_content(Bytes piece) override {
    if (!holding) return;
    if (content.size() < 4) {
      const std::size_t take = std::min<std::size_t>(4 - content.size(), piece.size());
      content.insert(content.end(), piece.begin(), piece.begin() + static_cast<long>(take));
      piece = piece.subspan(take);
      if (content.size() < 4) return;
      if (!needs_content(path, content)) {
        holding = false;
        return;
      }
      if (!is_torch_version_file(path) && size > limits.max_file_bytes) {
        problem(quote(path, 256), "an ELF file of " + std::to_string(size) +
                                      " bytes, over the limit of " +
                                      std::to_string(limits.max_file_bytes) + "; not read");
        holding = false;
        return;
      }
      content.reserve(static_cast<std::size_t>(size));
    }
    content.insert(content.end(), piece.begin(), piece.end());
  }

  void on_entry_end() override {
    if (holding && content.size() == size) read_content(path, content, facts);
    holding = false;
    content = {};
    if (!facts.empty()) files.put(path, std::move(facts));
    facts = {};
  }

  void on_problem(const Error& error) override { problem("", error.str()); }

  void start_stream() {
    decompressor = std::make_unique<Decompressor>(sniff_compression(head));
    tar = std::make_unique<TarReader>(*this, limits.tar);
    std::vector<std::byte> first = std::move(head);
    head.clear();
    push(first);
  }

  void push(Bytes bytes) {
    if (layer_failed || bytes.empty()) return;
    const auto to_tar = [this](Bytes piece) -> std::optional<Error> {
      out.bytes_unpacked += piece.size();
      if (decompressor->bytes_out() > limits.max_layer_bytes) {
        return Error{"", "more than " + std::to_string(limits.max_layer_bytes) +
                             " bytes uncompressed; the rest of the layer is not read"};
      }
      return tar->feed(piece);
    };
    if (auto error = decompressor->feed(bytes, to_tar)) {
      problem("", error->str());
      layer_failed = true;
    }
  }
};

ImageScanner::ImageScanner(ImageScanLimits limits) : state_(std::make_unique<State>()) {
  state_->limits = limits;
}

ImageScanner::~ImageScanner() = default;

void ImageScanner::begin_layer(std::string name) {
  State& s = *state_;
  s.layer = std::move(name);
  s.head.clear();
  s.decompressor.reset();
  s.tar.reset();
  s.layer_failed = false;
  s.files.begin_layer();
}

void ImageScanner::feed(Bytes chunk) {
  State& s = *state_;
  s.out.bytes_in += chunk.size();
  if (!s.decompressor) {
    const std::size_t take = std::min<std::size_t>(4 - s.head.size(), chunk.size());
    s.head.insert(s.head.end(), chunk.begin(), chunk.begin() + static_cast<long>(take));
    chunk = chunk.subspan(take);
    if (s.head.size() < 4) return;
    s.start_stream();
  }
  s.push(chunk);
}

void ImageScanner::end_layer() {
  State& s = *state_;
  if (!s.decompressor && !s.head.empty()) s.start_stream();
  if (s.decompressor && !s.layer_failed) {
    std::optional<Error> error = s.decompressor->finish();
    if (!error) error = s.tar->finish();
    if (error) s.problem("", error->str());
  }
  s.files.end_layer();
  ++s.out.layers;
}

void ImageScanner::add_file(const std::string& path, std::optional<Bytes> content) {
  State& s = *state_;
  if (!s.files.entry(path, false)) return;
  FileFacts facts = s.name_facts(path);
  if (content) s.read_content(path, *content, facts);
  if (!facts.empty()) s.files.put(path, std::move(facts));
}

void ImageScanner::add_problem(Error problem) {
  state_->problem(problem.where, std::move(problem.message));
}

ImageScan ImageScanner::finish() {
  State& s = *state_;
  ImageScan out = std::move(s.out);
  s.out = {};
  for (const auto& [path, facts] : s.files.files()) {
    if (!facts.sass.empty() || !facts.ptx.empty()) {
      out.files.push_back(ScannedFile{path, facts.sass, facts.ptx});
    }
    if (facts.cudart) out.cuda_runtimes.push_back(FileVersion{*facts.cudart, path});
    if (facts.compat &&
        (!out.cuda_compat || older_version(out.cuda_compat->version, *facts.compat))) {
      out.cuda_compat = FileVersion{*facts.compat, path};
    }
    if (facts.torch && !out.framework) out.framework = *facts.torch;
  }
  // The framework's own runtime: in the site-packages its version.py is in.
  if (out.framework) {
    const std::string& torch_path = out.framework->path;
    const std::string site =
        torch_path.substr(0, torch_path.size() - std::string("torch/version.py").size());
    for (const FileVersion& runtime : out.cuda_runtimes) {
      if (!site.empty() && runtime.path.starts_with(site)) {
        out.cuda_runtime = runtime;
        break;
      }
    }
  }
  if (!out.cuda_runtime) {
    for (const FileVersion& runtime : out.cuda_runtimes) {
      if (!out.cuda_runtime || older_version(out.cuda_runtime->version, runtime.version)) {
        out.cuda_runtime = runtime;
      }
    }
  }
  return out;
}

}  // namespace cudagate::scan
