#pragma once
// The webhook's two admission endpoints: /validate answers allowed or
// denied; /mutate may also pin the pod with a JSON Patch.

namespace cudagate {

enum class Endpoint : unsigned char { validate, mutate };

}  // namespace cudagate
