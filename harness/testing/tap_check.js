// Reads a TAP stream with a real TAP 14 consumer, node-tap's tap-parser (Debian: node-tap-parser;
// run with NODE_PATH=/usr/share/nodejs), in strict mode: any line that is not TAP, a YAML block
// that does not parse, a plan that does not match or a subtest that is not closed is a tapError.
//
//   node tap_check.js FILE [--ok true|false] [--points N] [--bailout true|false]
//
// Prints a JSON summary (ok, count, pass, fail, todo, skip, bailout, subtest points, diags with a
// verdict, tap errors, and every subtest point as read: name, ok, diag probe/candidate/verdict) and exits 1 on any tap error or unmet expectation, 0 otherwise.
'use strict'
const fs = require('fs')
const Parser = require('tap-parser')

const args = process.argv.slice(2)
const file = args.shift()
const expect = {}
while (args.length) {
  const key = args.shift().replace(/^--/, '')
  expect[key] = args.shift()
}

const tapErrors = []
let subtestPoints = 0
let diagsWithVerdict = 0
const asserts = []  // subtest points as read: name, ok and the diag's probe and verdict
const parser = new Parser({ strict: true })

function watch (p, depth) {
  p.on('assert', a => {
    if (depth > 0) subtestPoints++
    if (depth > 0) {
      const d = a.diag && typeof a.diag === 'object' ? a.diag : {}
      asserts.push({ name: a.name, ok: a.ok, probe: d.probe, candidate: d.candidate,
        verdict: d.verdict })
    }
    if (a.diag && typeof a.diag === 'object' && 'verdict' in a.diag) diagsWithVerdict++
  })
  p.on('child', c => watch(c, depth + 1))
  p.on('complete', r => {
    for (const f of r.failures || []) {
      if (f.tapError) tapErrors.push({ depth, error: f.tapError, line: f.data || f.name || '' })
    }
  })
}
watch(parser, 0)

parser.on('complete', r => {
  const summary = {
    ok: r.ok,
    count: r.count,
    pass: r.pass,
    fail: r.fail,
    todo: r.todo,
    skip: r.skip,
    bailout: r.bailout !== false,
    subtest_points: subtestPoints,
    diags_with_verdict: diagsWithVerdict,
    tap_errors: tapErrors,
    asserts
  }
  const problems = []
  if (tapErrors.length) problems.push('tap errors')
  if ('ok' in expect && String(r.ok) !== expect.ok) problems.push('ok is ' + r.ok)
  if ('points' in expect && subtestPoints !== Number(expect.points)) {
    problems.push('subtest points ' + subtestPoints)
  }
  if ('bailout' in expect && String(summary.bailout) !== expect.bailout) {
    problems.push('bailout ' + summary.bailout)
  }
  summary.problems = problems
  console.log(JSON.stringify(summary, null, 2))
  process.exitCode = problems.length ? 1 : 0
})
parser.end(fs.readFileSync(file))
