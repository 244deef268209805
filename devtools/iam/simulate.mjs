// Evaluates IAM requests offline with @cloud-copilot/iam-simulate (pinned in package.json).
// stdin: a JSON array of simulations in the library's shape; stdout: a JSON array of results, in order:
//   {decision: "Allowed" | "ImplicitlyDenied" | "ExplicitlyDenied", engine, ignored: [...], errors}
// The validated engine checks every policy and drops context keys it does not know for the action. It does not
// know keys with a colon-separated suffix such as kms:EncryptionContext:aws:sqs:arn, so a condition on one
// would always fail there: a request that carries only such unknown keys is evaluated again without that
// validation (the "unvalidated" engine), and says so.
import { runSimulation, runUnsafeSimulation } from '@cloud-copilot/iam-simulate'
import { createValidatedPolicy, validateResourcePolicy } from '@cloud-copilot/iam-policy'

const COLON_SUFFIXED = /^kms:EncryptionContext:.+/i

async function evaluate(sim) {
  const validated = await runSimulation(sim, {})
  if (validated.resultType === 'error') {
    return { decision: 'Error', engine: 'validated', ignored: [], errors: validated.errors }
  }
  const ignored = validated.resultType === 'single' ? validated.result.ignoredContextKeys ?? [] : []
  if (ignored.length === 0 || !ignored.every((k) => COLON_SUFFIXED.test(k))) {
    return { decision: validated.overallResult, engine: 'validated', ignored, errors: null }
  }
  const resourcePolicy = sim.resourcePolicy
    ? createValidatedPolicy(sim.resourcePolicy, validateResourcePolicy, { name: 'resource' })
    : undefined
  const decision = runUnsafeSimulation({ ...sim, resourcePolicy }, {})
  return { decision, engine: 'unvalidated', ignored, errors: null }
}

let input = ''
process.stdin.setEncoding('utf8')
for await (const chunk of process.stdin) input += chunk
const out = []
for (const sim of JSON.parse(input)) out.push(await evaluate(sim))
process.stdout.write(JSON.stringify(out))
