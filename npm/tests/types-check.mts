// Compiled (never run) by `tsc --noEmit` in npm/ci: the package's declarations as a
// TypeScript user meets them, for both entry points. A wrong or missing type fails CI.

import { conform, serve, wireScenario, wireTests, UncheckedRun, UnansweredStep, type Agent, type Verdict, type Violation } from 'ctxbed';
import { TIMEOUT_MS, wireScenario as vitestWireScenario, wireTests as vitestWireTests } from 'ctxbed/vitest';

export async function usesEveryEntryPoint(): Promise<number> {
  const server = await serve({ mock: { window: 200, turns: [{ reply: 'fine' }] }, name: 'small' });
  const models: unknown = await server.models();
  const { model, window } = await server.info();
  const found: Violation[] = server.violations({ rules: ['window', 'pairing'] });
  const requested: number = server.requests().length;
  await server.close();

  const run = await wireScenario('basic-tool-round', { harness: 'mine', context: 'docs recipe', assertChecked: true });
  for await (const step of run.steps()) {
    const result = run.tool(run.tools[0].name).call({});
    step.reply(`${step.session} ${step.input} ${result.text}`);
    const answered: boolean = step.answered;
  }
  const verdict: Verdict = await run.finish();
  const log: string | null = verdict.log;
  const budget: number | null = run.thinkingBudget;
  await run.assertWasChecked();
  const loose = await vitestWireScenario('tool-error', { assertChecked: false });
  await loose.cleanup();
  const errors: Error[] = [new UncheckedRun('x'), new UnansweredStep('y')];

  const agent: Agent = async (step) => step.input;
  const verdicts: Record<string, Verdict> = await conform.run(() => agent, { scenarios: ['tool-error'] });
  wireTests(['tool-error'], async (each) => each.check(), { harness: 'mine', version: '1.0.0' });
  vitestWireTests([], async (each) => {
    await each.violations();
  }, { timeout: TIMEOUT_MS });
  return [models, model, window, found, requested, verdict, verdicts, log, budget, errors].length;
}
