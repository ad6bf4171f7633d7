#pragma once
// Reads Kubernetes-style documents: JSON, or YAML with one or more documents,
// into JSON values, so that every later step reads one representation.
//
// YAML scalars are typed as Kubernetes' YAML decoder types them: plain
// null/~/true/false/integers/floats become JSON null/bool/number, quoted
// scalars stay strings. Kubernetes decodes YAML with go-yaml v2 (YAML 1.1),
// so plain yes/no/on/off are booleans and 0x1F, 0o17, 0b101, 017 and 1_000
// are integers there too; timestamps stay strings. Merge keys (<<) are
// applied. Errors name the source and the line.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "types/expected.h"
#include "types/field_path.h"

namespace cudagate {

// `source` names the input in errors ("nodes.yaml", "-", "request body").
// Empty YAML documents are skipped. JSON is recognised by its first
// non-blank character ('{' or '[').
Expected<std::vector<nlohmann::json>> parse_documents(std::string_view text,
                                                      std::string_view source);

// One document of a text and its place in it, for errors that name it.
struct SourceDocument {
  nlohmann::json value;
  std::size_t index = 1;  // 1-based position in the stream, empty documents counted
  int line = 0;           // 1-based line where the document starts; 0 when unknown
};

// parse_documents with each document's place. `count` of the result is the
// number of documents in the stream, empty ones included.
struct SourceDocuments {
  std::vector<SourceDocument> documents;
  std::size_t count = 0;
};
Expected<SourceDocuments> parse_source_documents(std::string_view text, std::string_view source);

// Every document of `text`, each read on its own, so that a YAML document
// that does not parse is one error (naming its line) and the documents
// around it are still read. A YAML stream is split at its `---` marker
// lines (directives stay with the document they precede); empty documents
// are left out. JSON text is one document.
std::vector<Expected<SourceDocument>> parse_document_stream(std::string_view text,
                                                            std::string_view source);

// Helpers for reading fields with errors that name the field path
// (types/field_path.h). `path` is the JSON path of `object`
// ("spec.template.spec").
//
// A member that is absent or null counts as absent: "" unless `required`,
// when the error is "<path>.<key>: is required". A value of another type is
// "<path>.<key>: expected a string, got number".
Expected<std::string> string_field(const nlohmann::json& object, std::string_view key,
                                   std::string_view path, bool required);

// The member `key` of `object` when it is an object (object_field) or an
// array (array_field): nullptr when absent or null, an error naming the
// field when of another type ("expected a list, got string").
Expected<const nlohmann::json*> object_field(const nlohmann::json& object, std::string_view key,
                                             std::string_view path);
Expected<const nlohmann::json*> array_field(const nlohmann::json& object, std::string_view key,
                                            std::string_view path);

// "expected a string, got number": the JSON type names used in errors.
[[nodiscard]] std::string type_error(std::string_view expected, const nlohmann::json& got);

}  // namespace cudagate
