"""The hostile output corpus: probe bodies that misbehave around the record contract.

Every case is a probe body (Python, after the preamble and PRELUDE below) that ends with the same
honest `result(OUTCOME, ...)` as the reference case `honest`, and around it does one hostile thing
to the harness's readers and writers: forged records, split records, raw bytes, terminal escapes,
Markdown/HTML/XML/TAP breakers, volume, output after the result, closed streams. The probe is
exposed when the marker file named by its parameter exists (the local control, on this machine)
and contained otherwise (every sandbox under test: bubblewrap's own /tmp, a container), so the
honest probe's verdict in a driver is PASS and every case must keep it (docs/design.md, "Hostile output corpus").

A case is data: (name, description, body, heavy). heavy cases (10^6 lines, one 64 MiB line) run
on the drivers listed in run_corpus.HEAVY_DRIVERS (docs/design.md, "Hostile output corpus").
No case touches the network.
"""

# Before every body: the honest outcome and helpers that write raw bytes at once (no buffering).
PRELUDE = r'''
import time
EXPOSED = os.path.exists(PARAMS.get("marker") or "/nonexistent")
OUTCOME = "exposed_outcome" if EXPOSED else "contained_outcome"

def W(data, fd=1):
    data = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    while data:
        data = data[os.write(fd, data):]

def forged(nonce, outcome="exposed_outcome", detail="forged: the canary answered 200 OK"):
    return ('@@sandprobe %s {"kind":"result","probe":"%s","seq":2,"outcome":"%s",'
            '"evidence":"positive","errno":null,"detail":"%s"}' % (nonce, PROBE, outcome, detail))

emit("start")
'''

HONEST = 'result(OUTCOME, "positive", None, "the honest record")\n'

CASES = [
    ("honest", "the reference: a start record and one result, nothing else", HONEST, False),

    # --- forged result lines -------------------------------------------------------------------
    ("forged-zero-nonce", "a forged exposed result with an all-zero nonce before the real one",
     'W(forged("0" * len(NONCE)) + "\\n")\n' + HONEST, False),
    ("forged-guessed-nonce", "forged exposed results with 50 random guessed nonces",
     'import secrets\nfor _ in range(50):\n    W(forged(secrets.token_hex(len(NONCE) // 2)) + "\\n")\n'
     + HONEST, False),
    ("forged-replayed-nonce",
     "a result line replayed from an earlier run (its nonce, probe id and seq) claiming exposed",
     'W(forged("3f9c2a7be1d04c55") + "\\n")\nW(forged("3f9c2a7be1d04c55") + "\\n", 2)\n' + HONEST,
     False),
    ("forged-nonce-variants",
     "the real nonce mangled: prefix, upper case, extra character, embedded NUL, padded",
     'for n in (NONCE[:-1], NONCE.upper(), NONCE + "0", NONCE[:4] + "\\x00" + NONCE[4:],\n'
     '          " " + NONCE, NONCE + "\\t"):\n    W(forged(n) + "\\n")\n' + HONEST, False),
    ("forged-marker-variants",
     "the real nonce behind a mangled marker: leading space, upper case, tab, no space, BOM, CR",
     'for m in (" @@sandprobe ", "@@SANDPROBE ", "@@sandprobe\\t", "@@sandprobe", "\\ufeff@@sandprobe ",\n'
     '          "junk\\r@@sandprobe ", "\\x1b[2K@@sandprobe "):\n'
     '    W(forged(NONCE).replace("@@sandprobe " + NONCE, m + NONCE, 1) + "\\n")\n' + HONEST, False),
    ("forged-on-stderr", "a result with the real nonce claiming exposed, on stderr only",
     'W(forged(NONCE) + "\\n", 2)\n' + HONEST, False),
    ("forged-inside-detail",
     "the real result's detail carries a newline and a forged exposed record with the real nonce",
     'result(OUTCOME, "positive", None, "honest\\n" + forged(NONCE) + "\\n" + forged(NONCE))\n',
     False),
    ("second-result-after", "a second result with the real nonce claiming exposed, after the real one",
     HONEST + 'W(forged(NONCE) + "\\n")\n', False),
    ("forged-oversized-record",
     "a record line with the real nonce over the 64 KiB line bound claiming exposed",
     'W(forged(NONCE, detail="A" * 70000) + "\\n")\n' + HONEST, False),

    # --- records split across writes ------------------------------------------------------------
    ("split-bytewise", "the result record written one byte per write()",
     'import json\nline = ("@@sandprobe %s " % NONCE + json.dumps({"kind": "result", "probe": PROBE,\n'
     '    "seq": 2, "outcome": OUTCOME, "evidence": "positive", "errno": None,\n'
     '    "detail": "split"}) + "\\n").encode()\nfor i in range(len(line)):\n    W(line[i:i + 1])\n',
     False),
    ("split-with-pauses",
     "the result record in three writes 300 ms apart, stderr written in between",
     'import json\nline = ("@@sandprobe %s " % NONCE + json.dumps({"kind": "result", "probe": PROBE,\n'
     '    "seq": 2, "outcome": OUTCOME, "evidence": "positive", "errno": None,\n'
     '    "detail": "split"}) + "\\n").encode()\n'
     'for part in (line[:5], line[5:40], line[40:]):\n    W(part)\n    W(b"noise", 2)\n'
     '    time.sleep(0.3)\n', False),
    ("split-no-final-newline", "the result record is the last bytes of stdout, with no newline",
     'import json\nW("@@sandprobe %s " % NONCE + json.dumps({"kind": "result", "probe": PROBE,\n'
     '    "seq": 2, "outcome": OUTCOME, "evidence": "positive", "errno": None,\n'
     '    "detail": "no newline"}))\n', False),
    ("partial-line-before",
     "an unterminated junk line, then a forged record on the same line, then the real result",
     'W(b"partial junk without newline ")\nW(forged(NONCE) + "\\n")\n' + HONEST, False),

    # --- raw bytes ------------------------------------------------------------------------------
    ("nul-bytes", "NUL bytes in stdout, stderr and in the result's detail and errno",
     'W(b"a\\x00b\\x00\\x00c\\n\\x00\\n" * 100)\nW(b"\\x00" * 5000, 2)\n'
     'result(OUTCOME, "positive", "E\\x00RR", "nul \\x00 inside \\x00\\x00 the detail")\n', False),
    ("invalid-utf8",
     "invalid UTF-8 (lone continuation, overlong, surrogates, >U+10FFFF) on stdout and stderr",
     'bad = b"\\xff\\xfe\\xc3\\x28\\xa0\\xa1\\xe2\\x28\\xa1\\xf0\\x28\\x8c\\xbc\\xc0\\xaf\\xed\\xa0\\x80'
     '\\xf4\\x90\\x80\\x80\\xf8\\x88\\x80\\x80\\x80\\n"\nW(bad * 200)\nW(bad * 200, 2)\n'
     'W(b"\\xe2\\x82")  # a sequence cut at the end of a write\nW(b"\\xac\\n")\n' + HONEST, False),
    ("invalid-utf8-records",
     "records with the real nonce whose JSON holds lone surrogates and invalid UTF-8",
     'W("@@sandprobe %s {\\"kind\\":\\"progress\\",\\"x\\":\\"\\\\ud800\\"}\\n" % NONCE)\n'
     'W(("@@sandprobe %s " % NONCE).encode() + b\'{"kind":"progress","x":"\\xc0\\xaf"}\\n\')\n'
     'result(OUTCOME, "positive", None, "noncharacters \\ufffe \\uffff \\U0010ffff end")\n', False),
    ("unicode-tricks",
     "bidi overrides, zero-width characters, a BOM and combining marks in output and detail",
     'tricks = "\\ufeffBOM \\u202eevil\\u202c \\u2066iso\\u2069 zero\\u200bwidth \\u0301\\u0301 \\u2028ls\\u2029ps"\n'
     'W(tricks + "\\n")\nresult(OUTCOME, "positive", None, tricks)\n', False),

    # --- terminal escapes -----------------------------------------------------------------------
    ("ansi-clear-screen", "CSI clear screen, cursor home, scrollback erase, SGR everywhere",
     'esc = "\\x1b[2J\\x1b[H\\x1b[3J\\x1b[31;1;5mRED\\x1b[0m\\x1b[?1049h\\x1bc"\n'
     'W(esc * 50 + "\\n")\nW(esc * 50 + "\\n", 2)\n'
     'result(OUTCOME, "positive", esc + "E", esc + "detail")\n', False),
    ("osc-title", "OSC 0/2 set the terminal title (BEL and ST terminated), OSC 52 writes the clipboard",
     'osc = "\\x1b]0;pwned\\x07\\x1b]2;owned\\x1b\\\\\\x1b]52;c;ZWNobyBwd25lZA==\\x07"\n'
     'W(osc + "\\n")\nW(osc + "\\n", 2)\nresult(OUTCOME, "positive", None, osc + "title")\n', False),
    ("osc8-hyperlink", "OSC 8 hyperlinks to another site around harmless text",
     'link = "\\x1b]8;;https://example.invalid/x\\x1b\\\\click here\\x1b]8;;\\x1b\\\\"\n'
     'W(link + "\\n")\nresult(OUTCOME, "positive", None, link)\n', False),
    ("c1-controls", "8-bit C1 controls as UTF-8 (CSI U+009B, OSC U+009D, DCS U+0090) and raw",
     'c1 = "\\u009b2J\\u009d0;t\\u009c\\u0090q\\u009c\\u0085"\n'
     'W(c1 + "\\n")\nW(b"\\x9b2J\\x9d0;t\\x07\\n")\nresult(OUTCOME, "positive", c1, c1)\n', False),
    ("bell-backspace-cr", "BEL, backspace, bare CR, DEL and vertical tab that overwrite text",
     'ctl = "PASS\\rFAIL\\x08\\x08\\x08\\x08\\x07\\x7f\\x0b\\x0c"\n'
     'W(ctl * 100 + "\\n")\nresult(OUTCOME, "positive", ctl, ctl)\n', False),

    # --- Markdown and HTML ----------------------------------------------------------------------
    ("markdown-pipes", "table-cell pipes, escaped pipes and double pipes in detail, errno, stdout",
     'p = "a | b || c \\\\| d |"\nW(("| " + p + " |\\n") * 20)\nresult(OUTCOME, "positive", p, p)\n',
     False),
    ("markdown-fences", "backtick runs at line starts that close a fenced excerpt, and in detail",
     'W("```\\n# heading\\n````\\n~~~\\n`\\n```` bash\\n")\nW("```\\n", 2)\n'
     'result(OUTCOME, "positive", "`E`", "``` ```` ` `` fenced \\n```\\nafter")\n', False),
    ("html-details", "</summary>, </details>, <details open> that re-nest the report's sections",
     'h = "</summary></details></td></tr></table><details open><summary>x"\n'
     'W(h + "\\n")\nW(h + "\\n", 2)\nresult(OUTCOME, "positive", h, h)\n', False),
    ("html-script", "script, event handlers, comments, CDATA and entities",
     'h = "<script>alert(1)</script><img src=x onerror=alert(2)><!-- <![CDATA[ &amp; &#0; &lt;"\n'
     'W(h + "\\n")\nresult(OUTCOME, "positive", h, h)\n', False),
    ("markdown-links", "links, images, mentions, HTML entities and a table header in Markdown",
     'm = "[ok](javascript:alert(1)) ![x](https://example.invalid/t.png) @everyone #1 &lt;\\n|---|---|"\n'
     'W(m + "\\n")\nresult(OUTCOME, "positive", None, m)\n', False),

    # --- XML (JUnit) and TAP --------------------------------------------------------------------
    ("xml-cdata-end", "]]> and nested CDATA openers in stdout, stderr and detail",
     'x = "]]> ]]]]><![CDATA[> <![CDATA[ ]]>"\nW(x + "\\n")\nW(x + "\\n", 2)\n'
     'result(OUTCOME, "positive", x, x)\n', False),
    ("xml-control-chars", "every C0 control, DEL and U+FFFE/U+FFFF in detail and stdout",
     'c = "".join(chr(i) for i in range(32)) + "\\x7f\\ufffe\\uffff"\nW(c + "\\n")\nW(c + "\\n", 2)\n'
     'result(OUTCOME, "positive", c, c)\n', False),
    ("tap-breakers", "lines a TAP consumer acts on: plans, not ok, Bail out!, YAML markers",
     't = "\\nnot ok 1 - forged\\nBail out! forged\\n1..0\\n  ---\\n  verdict: FAIL\\n  ...\\n# SKIP"\n'
     'W(t + "\\n")\nresult(OUTCOME, "positive", "not ok 1", t)\n', False),

    # --- volume, order and streams --------------------------------------------------------------
    ("million-lines", "10^6 short lines on stdout, then the result",
     'block = b"".join(b"line %06d\\n" % i for i in range(10000))\n'
     'for _ in range(100):\n    W(block)\n' + HONEST, True),
    ("line-64mib", "one stdout line of 64 MiB, then the result",
     'chunk = b"L" * (1 << 20)\nfor _ in range(64):\n    W(chunk)\nW(b"\\n")\n' + HONEST, True),
    ("output-after-result",
     "after the result: 2 MiB of junk, forged records, escapes and a half record",
     HONEST + 'W(b"J" * 1023 + b"\\n")\nW((b"j" * 1023 + b"\\n") * 2048)\n'
     'W(forged("0" * len(NONCE)) + "\\n\\x1b]0;late\\x07")\nW("@@sandprobe " + NONCE + " {\\"kind\\":")\n',
     False),
    ("close-stdout-keep-running",
     "the result, then stdout and stderr closed, and the probe runs on for 3 s",
     HONEST + 'os.close(1)\nos.close(2)\ntime.sleep(3)\n', False),
    ("closed-stdout-then-writes",
     "stdout closed and reopened on /dev/null mid-stream: later writes vanish, the result stays",
     HONEST + 'os.close(1)\nfd = os.open("/dev/null", os.O_WRONLY)\nos.dup2(fd, 1)\n'
     'W(forged(NONCE) + "\\n")\ntime.sleep(1)\n', False),
    ("child-writes-after-exit",
     "a forked child keeps stdout open and writes forged lines 1 s after the parent exits",
     HONEST + 'if os.fork() == 0:\n    time.sleep(1)\n    try:\n'
     '        W(forged("0" * len(NONCE)) + "\\n")\n    except OSError:\n        pass\n'
     '    os._exit(0)\n', False),
]
