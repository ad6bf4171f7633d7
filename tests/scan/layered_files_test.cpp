// Layers applied as the OCI image spec's changesets are (image-spec
// layer.md, "Whiteouts"): deletions, opaque directories, replacements, and
// whiteouts that never hide their own layer's files. Then the whole path:
// gzip and zstd layers made by tar, with a library deleted and one replaced,
// read through the decompressor and the tar reader.
#include "scan/layered_files.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "scan/decompressor.h"
#include "scan/tar_reader.h"
#include "tests/support/layer_tools.h"

namespace cudagate::scan {
namespace {

// A member of a layer: its path, whether a directory, and the facts of a
// file that has any ("" for none).
struct Member {
  std::string path;
  std::string facts;
  bool directory = false;
};
using Layer = std::vector<Member>;

std::map<std::string, std::string> apply_layers(const std::vector<Layer>& layers) {
  LayeredFiles<std::string> files;
  for (const Layer& layer : layers) {
    files.begin_layer();
    for (const Member& m : layer) {
      if (files.entry(m.path, m.directory) && !m.facts.empty()) files.put(m.path, m.facts);
    }
    files.end_layer();
  }
  return files.files();
}

TEST(LayeredFiles, AppliesChangesetsAsTheImageSpecSays) {
  using Files = std::map<std::string, std::string>;
  const Layer base = {{"usr/lib/libcudart.so.12", "cudart 12.4"},
                      {"opt/app/libkernels.so", "sm_80"},
                      {"opt/app/ext/libext.so", "sm_75"}};
  struct Row {
    std::string name;
    std::vector<Layer> layers;
    Files want;
  };
  const Row rows[] = {
      {"one layer",
       {base},
       Files{{"usr/lib/libcudart.so.12", "cudart 12.4"},
             {"opt/app/libkernels.so", "sm_80"},
             {"opt/app/ext/libext.so", "sm_75"}}},
      {"a whiteout deletes a file",
       {base, {{"opt/app/.wh.libkernels.so", ""}}},
       Files{{"usr/lib/libcudart.so.12", "cudart 12.4"}, {"opt/app/ext/libext.so", "sm_75"}}},
      {"a whiteout deletes a directory and all below it",
       {base, {{"opt/.wh.app", ""}}},
       Files{{"usr/lib/libcudart.so.12", "cudart 12.4"}}},
      {"an opaque directory hides the lower contents, not its own",
       {base, {{"opt/app/.wh..wh..opq", ""}, {"opt/app/libnew.so", "sm_90a"}}},
       Files{{"usr/lib/libcudart.so.12", "cudart 12.4"}, {"opt/app/libnew.so", "sm_90a"}}},
      {"a whiteout never hides its own layer's file, in either order",
       {base,
        {{"opt/app/libkernels.so", "sm_86"}, {"opt/app/.wh.libkernels.so", ""}},
        {{"usr/lib/.wh.libcudart.so.12", ""}, {"usr/lib/libcudart.so.12", "cudart 12.8"}}},
       Files{{"usr/lib/libcudart.so.12", "cudart 12.8"},
             {"opt/app/libkernels.so", "sm_86"},
             {"opt/app/ext/libext.so", "sm_75"}}},
      {"a file without facts replaces one with",
       {base, {{"opt/app/libkernels.so", ""}}},
       Files{{"usr/lib/libcudart.so.12", "cudart 12.4"}, {"opt/app/ext/libext.so", "sm_75"}}},
      {"a directory keeps what lies below it",
       {base, {{"opt/app", "", true}}},
       Files{{"usr/lib/libcudart.so.12", "cudart 12.4"},
             {"opt/app/libkernels.so", "sm_80"},
             {"opt/app/ext/libext.so", "sm_75"}}},
      {"a file over a directory hides what was below it",
       {base, {{"opt/app", ""}}},
       Files{{"usr/lib/libcudart.so.12", "cudart 12.4"}}},
      {"an opaque root hides every lower file",
       {base, {{".wh..wh..opq", ""}, {"bin/tool", "sm_120"}}},
       Files{{"bin/tool", "sm_120"}}},
      {"a prefix of a name is not a folder of it",
       {{{"opt/app", "a"}, {"opt/app2/x", "b"}}, {{"opt/.wh.app", ""}}},
       Files{{"opt/app2/x", "b"}}},
  };
  for (const Row& row : rows) EXPECT_EQ(apply_layers(row.layers), row.want) << row.name;
}

TEST(LayeredFiles, FindsTheCurrentLayerBeforeTheLowerOnes) {
  LayeredFiles<std::string> files;
  files.begin_layer();
  EXPECT_TRUE(files.entry("lib/a.so", false));
  files.put("lib/a.so", "old");
  files.end_layer();
  files.begin_layer();
  EXPECT_FALSE(files.entry("lib/.wh.b.so", false));  // a marker, no file
  ASSERT_NE(files.find("lib/a.so"), nullptr);
  EXPECT_EQ(*files.find("lib/a.so"), "old");  // a hard link to it would get this
  files.entry("lib/a.so", false);
  files.put("lib/a.so", "new");
  EXPECT_EQ(*files.find("lib/a.so"), "new");
  EXPECT_EQ(files.find("lib/b.so"), nullptr);
}

// Reads each member's first bytes as its facts: what a scan would learn.
struct FirstLine : TarVisitor {
  LayeredFiles<std::string>& files;
  std::string path;
  std::string text;
  explicit FirstLine(LayeredFiles<std::string>& f) : files(f) {}
  bool on_entry(const TarEntry& entry) override {
    const bool member = files.entry(entry.path, entry.type == TarEntry::Type::directory);
    path = entry.path;
    text.clear();
    return member && entry.type == TarEntry::Type::file;
  }
  void on_content(std::span<const std::byte> piece) override {
    text.append(reinterpret_cast<const char*>(piece.data()), piece.size());
  }
  void on_entry_end() override {
    if (text.starts_with("ELF")) files.put(path, text.substr(0, text.find('\n')));
  }
  void on_problem(const Error& problem) override { ADD_FAILURE() << problem.str(); }
};

TEST(LayeredFiles, LayersBuiltByTarReadThroughTheWholePath) {
  test_support::LayerWorkdir work;
  // Layer 1: two libraries. Layer 2 (gzip): one deleted, one replaced.
  // Layer 3 (zstd): an opaque directory with a new library in it.
  work.write("l1/usr/lib/libkernels.so", "ELF sm_80\n");
  work.write("l1/usr/lib/libold.so", "ELF sm_70\n");
  work.write("l1/opt/ext/libext.so", "ELF sm_75\n");
  work.write("l2/usr/lib/libkernels.so", "ELF sm_80 sm_90a\n");
  work.write("l2/usr/lib/.wh.libold.so", "");
  work.write("l3/opt/ext/.wh..wh..opq", "");
  work.write("l3/opt/ext/libnew.so", "ELF sm_120\n" + test_support::compressible_text(300000));
  work.run(
      "tar -C l1 -cf l1.tar . && tar -C l2 -czf l2.tar.gz . && tar -C l3 -cf - . | zstd -q "
      "-c > l3.tar.zst");
  LayeredFiles<std::string> files;
  for (const char* layer : {"l1.tar", "l2.tar.gz", "l3.tar.zst"}) {
    const auto blob = work.read(layer);
    files.begin_layer();
    FirstLine visitor(files);
    TarReader tar(visitor);
    Decompressor decompressor(sniff_compression(blob));
    const auto to_tar = [&](std::span<const std::byte> piece) { return tar.feed(piece); };
    for (const auto piece : test_support::pieces_of(blob, 8192)) {
      ASSERT_FALSE(decompressor.feed(piece, to_tar)) << layer;
    }
    ASSERT_FALSE(decompressor.finish()) << layer;
    ASSERT_FALSE(tar.finish()) << layer;
    files.end_layer();
  }
  const std::map<std::string, std::string> want = {
      {"usr/lib/libkernels.so", "ELF sm_80 sm_90a"},
      {"opt/ext/libnew.so", "ELF sm_120"},
  };
  EXPECT_EQ(files.files(), want);
}

}  // namespace
}  // namespace cudagate::scan
