# res.output-flood: write far more output than any sane cap, then a result record. The harness
# (not the probe) decides: it compares the stdout bytes it received with what was written
# (classify.output). Only whole lines are written, so the records stay parseable.

MIB = 1 << 20
TOTAL = int(min(max(float(PARAMS.get("total_mib", 64)), 0.0), 1024.0) * MIB)
LINE = b"f" * 1023 + b"\n"
CHUNK = LINE * 64  # 64 KiB

emit("start", total_bytes=TOTAL)
written, next_progress = 0, 8 * MIB
while written < TOTAL:
    data = CHUNK[:max(len(LINE), min(len(CHUNK), (TOTAL - written + 1023) // 1024 * 1024))]
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
    written += len(data)
    if written >= next_progress:
        emit("progress", written_mib=written // MIB)
        next_progress += 8 * MIB
result("written", "absence", detail="wrote %d bytes of filler" % written, written_bytes=written)
