// libFuzzer target: a kubeconfig's text -> kube::ParseKubeconfig
// (drivers/kubernetes/kubeconfig.cc), as LoadKubeconfig reads a file. The file's folder does not
// exist, so relative certificate and token paths name nothing; absolute ones are read as kubectl
// would.
#include "drivers/kubernetes/kubeconfig.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using sandprobe::fuzz::Check;
  const std::string text = sandprobe::fuzz::Text(data, size);
  for (const char* context : {"", "ctx"}) {
    auto c = sandprobe::drivers::kube::ParseKubeconfig(text, "/nonexistent-fuzz/config", context);
    if (c) {
      Check(c->server.starts_with("https://"), "a connection's server is https");
    } else {
      Check(c.error().starts_with("kubeconfig /nonexistent-fuzz/config"),
            "a kubeconfig error names the file");
    }
  }
  return 0;
}
