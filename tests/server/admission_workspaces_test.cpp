// The workspaces admissions borrow: one per admission at a time, a new one
// only when every kept one is lent, each returned for the next admission,
// and a lease moved along (into a lookup's completion) returns it once.
#include "server/admission_workspaces.h"

#include <gtest/gtest.h>

#include <optional>
#include <utility>

namespace cudagate {
namespace {

TEST(AdmissionWorkspaces, ALeaseReturnsItsWorkspaceForTheNextAdmission) {
  AdmissionWorkspaces pool;
  AdmissionWorkspace* first = nullptr;
  {
    const auto lease = pool.acquire();
    first = &*lease;
  }
  const auto again = pool.acquire();
  EXPECT_EQ(&*again, first);
  EXPECT_EQ(pool.size(), 1U);
}

TEST(AdmissionWorkspaces, AdmissionsAtOnceHaveWorkspacesOfTheirOwn) {
  AdmissionWorkspaces pool;
  const auto one = pool.acquire();
  const auto two = pool.acquire();
  EXPECT_NE(&*one, &*two);
  EXPECT_EQ(pool.size(), 2U);
}

TEST(AdmissionWorkspaces, AMovedLeaseReturnsItsWorkspaceOnce) {
  AdmissionWorkspaces pool;
  std::optional<AdmissionWorkspaces::Lease> moved;
  AdmissionWorkspace* lent = nullptr;
  {
    auto lease = pool.acquire();
    lent = &*lease;
    moved.emplace(std::move(lease));
  }
  // Still lent: the next admission gets another.
  const auto other = pool.acquire();
  EXPECT_NE(&*other, lent);
  moved.reset();
  const auto back = pool.acquire();
  EXPECT_EQ(&*back, lent);
  EXPECT_EQ(pool.size(), 2U);
}

}  // namespace
}  // namespace cudagate
