// The pool of admission workspaces: a free list under a mutex, held only
// to take or put back one pointer.
#include "server/admission_workspaces.h"

#include <utility>

namespace cudagate {

AdmissionWorkspaces::Lease::~Lease() {
  if (workspace_) pool_->give_back(std::move(workspace_));
}

AdmissionWorkspaces::Lease AdmissionWorkspaces::acquire() {
  {
    const std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      std::unique_ptr<AdmissionWorkspace> workspace = std::move(free_.back());
      free_.pop_back();
      return Lease(*this, std::move(workspace));
    }
    ++created_;
    // Room for every workspace to come back without the list growing.
    free_.reserve(created_);
  }
  return Lease(*this, std::make_unique<AdmissionWorkspace>());
}

std::size_t AdmissionWorkspaces::size() const {
  const std::lock_guard lock(mutex_);
  return created_;
}

void AdmissionWorkspaces::give_back(std::unique_ptr<AdmissionWorkspace> workspace) {
  const std::lock_guard lock(mutex_);
  free_.push_back(std::move(workspace));
}

}  // namespace cudagate
