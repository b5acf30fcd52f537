# platform.runtime-class: judged on the Kubernetes API server's answer to a Pod without
# runtimeClassName (dry run), which the harness submits itself. Nothing to do in the sandbox.

emit("start")
result("not_applicable", "absence", None,
       "admission is tested by the harness against the API server, not from inside the sandbox")
