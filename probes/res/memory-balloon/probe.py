# res.memory-balloon: allocate AND WRITE memory in steps up to a finite target above the claimed
# limit. Untouched pages are never charged to the cgroup, so every byte is written; a progress
# record per step means the last line before an OOM kill says how far it got.

TARGET_MIB = int(PARAMS.get("target_mib", 512))
STEP_MIB = max(1, int(PARAMS.get("step_mib", 16)))  # 0 would never end
CLAIMED_MIB = int(PARAMS.get("claimed_mib", 0))  # the judge holds allocated_mib to this claim
# TCP echo canary for heartbeats (default: the harness's own)
CANARY = heartbeat_target(PARAMS.get("canary", "{canary.tcp}"))
MIB = 1 << 20

emit("start", target_mib=TARGET_MIB, step_mib=STEP_MIB, claimed_mib=CLAIMED_MIB, canary=CANARY)
start_heartbeats(CANARY)  # "stopped means stopped": beats after the call's end are the evidence
outlive_reader()  # nor does it stop when the caller stops reading its output
chunks, allocated, reached = [], 0, False
try:
    while allocated < TARGET_MIB:
        step = min(STEP_MIB, TARGET_MIB - allocated)
        chunks.append(b"\x5a" * (step * MIB))  # bytes repetition fills (writes) every page
        allocated += step
        emit("progress", allocated_mib=allocated)
    reached = True
except MemoryError:
    pass  # the limit held (an address-space or allocator limit; a cgroup OOM kills instead)
finally:
    chunks.clear()  # give the memory back before anything else is written

if reached:
    result("target_reached", "positive", None, "allocated and wrote %d MiB" % allocated,
           allocated_mib=allocated, target_mib=TARGET_MIB)
else:
    result("memory_error", "positive", "MemoryError", "MemoryError after %d MiB" % allocated,
           allocated_mib=allocated, target_mib=TARGET_MIB)
