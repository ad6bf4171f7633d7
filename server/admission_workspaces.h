#pragma once
// The admission workspaces the server lends its requests
// (admission/admission.h): one per admission being read or decided at a
// time, so as many as threads admit at once, each kept for the next
// admission with the buffers and memo it has grown.
//
// Thread-safety: acquire() may be called from any thread; a Lease is used
// by one thread at a time and returns its workspace when it goes.

#include <memory>
#include <mutex>
#include <vector>

#include "admission/admission.h"

namespace cudagate {

class AdmissionWorkspaces {
 public:
  class Lease {
   public:
    Lease(AdmissionWorkspaces& pool, std::unique_ptr<AdmissionWorkspace> workspace)
        : pool_(&pool), workspace_(std::move(workspace)) {}
    Lease(Lease&&) noexcept = default;
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease();
    [[nodiscard]] AdmissionWorkspace& operator*() const { return *workspace_; }

   private:
    AdmissionWorkspaces* pool_;
    std::unique_ptr<AdmissionWorkspace> workspace_;
  };

  // A free workspace, or a new one when every one is lent.
  [[nodiscard]] Lease acquire();
  // Workspaces kept, lent or free (for tests).
  [[nodiscard]] std::size_t size() const;

 private:
  void give_back(std::unique_ptr<AdmissionWorkspace> workspace);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<AdmissionWorkspace>> free_;
  std::size_t created_ = 0;
};

}  // namespace cudagate
