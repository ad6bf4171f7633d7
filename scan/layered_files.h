#pragma once
// An image's files as its layers leave them: what each file of interest was
// found to hold (a T: a scan's facts), kept by path, with every later layer
// applied over the earlier ones the way the OCI image spec's changesets are
// (image-spec layer.md, "Whiteouts"; containerd's and Docker's appliers):
//
// - a member of a layer replaces what lower layers had at its path; a file,
//   link or device also hides everything lower layers had below that path
//   (it replaces a directory); a directory keeps the lower directory's
//   contents;
// - `<dir>/.wh.<name>` deletes `<dir>/<name>` and all below it, in lower
//   layers only;
// - `<dir>/.wh..wh..opq` (opaque) deletes everything lower layers had below
//   `<dir>`, keeping the directory;
// - whiteouts never hide what their own layer holds, whatever the order of
//   the members, and are no files themselves.
//
// So a library a later layer deletes or overwrites is not reported, and one
// it adds is. Use: begin_layer(), then for each member entry(); put() the
// facts of the files that have any; end_layer(). Paths are normalised member
// names (tar_reader.h). Not thread-safe; one image at a time.

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cudagate::scan {

template <class T>
class LayeredFiles {
 public:
  static constexpr std::string_view kWhiteoutPrefix = ".wh.";
  static constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";

  void begin_layer() {
    current_.clear();
    deleted_.clear();
    opaque_.clear();
    replaced_.clear();
  }

  // A member of the current layer. Returns false when it is a whiteout
  // marker (recorded here; no file), true for a member of the file tree.
  bool entry(std::string_view path, bool directory) {
    const std::size_t slash = path.rfind('/');
    const std::string_view dir = slash == std::string_view::npos ? "" : path.substr(0, slash);
    const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
    if (base == kOpaqueMarker) {
      opaque_.emplace_back(dir);
      return false;
    }
    if (base.starts_with(kWhiteoutPrefix)) {
      const std::string_view name = base.substr(kWhiteoutPrefix.size());
      deleted_.push_back(dir.empty() ? std::string(name)
                                     : std::string(dir) + "/" + std::string(name));
      return false;
    }
    replaced_.emplace_back(std::string(path), directory);
    // The same path twice in one layer: the later member wins.
    current_.erase(std::string(path));
    return true;
  }

  // What the current layer's file at `path` holds.
  void put(std::string path, T facts) {
    current_.insert_or_assign(std::move(path), std::move(facts));
  }

  // The facts of `path` as the image stands now, the current layer
  // included (for a hard link's target); nullptr when none.
  [[nodiscard]] const T* find(const std::string& path) const {
    if (const auto it = current_.find(path); it != current_.end()) return &it->second;
    if (const auto it = files_.find(path); it != files_.end()) return &it->second;
    return nullptr;
  }

  // Applies the current layer over the ones below it.
  void end_layer() {
    for (const std::string& path : deleted_) erase_tree(path, true);
    for (const std::string& dir : opaque_) erase_tree(dir, false);
    for (const auto& [path, directory] : replaced_) {
      if (directory) {
        files_.erase(path);  // a file it replaces; the directory's contents stay
      } else {
        erase_tree(path, true);
      }
    }
    for (auto& [path, facts] : current_) files_.insert_or_assign(path, std::move(facts));
    begin_layer();
  }

  // The files with facts, by path, after the layers ended so far.
  [[nodiscard]] const std::map<std::string, T>& files() const { return files_; }

 private:
  // Erases `path` itself (unless !with_self, then only what lies below
  // it; "" is the root), from the lower layers' files.
  void erase_tree(const std::string& path, bool with_self) {
    if (path.empty()) {
      files_.clear();  // the root: every file
      return;
    }
    if (with_self) files_.erase(path);
    const std::string prefix = path + "/";
    auto it = files_.lower_bound(prefix);
    while (it != files_.end() && it->first.starts_with(prefix)) it = files_.erase(it);
  }

  std::map<std::string, T> files_;                      // the layers ended so far
  std::map<std::string, T> current_;                    // the current layer's files with facts
  std::vector<std::string> deleted_;                    // .wh.<name> targets
  std::vector<std::string> opaque_;                     // directories made opaque
  std::vector<std::pair<std::string, bool>> replaced_;  // members: path, is a directory
};

}  // namespace cudagate::scan
