// A kernel that proves code for the device was found and ran: it writes a
// known value that the host checks.
#include <cstdio>

__global__ void mark(int* out) {
  *out = 42;
}

int main() {
  int* d = nullptr;
  cudaError_t err = cudaMalloc(&d, sizeof(int));
  if (err != cudaSuccess) {
    std::printf("error: %s\n", cudaGetErrorString(err));
    return 2;
  }
  mark<<<1, 1>>>(d);
  err = cudaGetLastError();
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    std::printf("error: %s\n", cudaGetErrorString(err));
    return 1;
  }
  int h = 0;
  cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
  std::printf(h == 42 ? "ran\n" : "error: wrong result\n");
  return h == 42 ? 0 : 3;
}
