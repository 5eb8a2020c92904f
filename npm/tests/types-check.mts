// Compiled (never run) by `tsc --noEmit` in npm/ci: the package's declarations as a
// TypeScript user meets them, for both entry points. A wrong or missing type fails CI.

import { conform, serve, wireScenario, wireTests, type Agent, type Verdict, type Violation } from 'ctxbed';
import { wireTests as vitestWireTests } from 'ctxbed/vitest';

export async function usesEveryEntryPoint(): Promise<number> {
  const server = await serve({ mock: { window: 200, turns: [{ reply: 'fine' }] }, name: 'small' });
  const models: unknown = await server.models();
  const { model, window } = await server.info();
  const found: Violation[] = server.violations({ rules: ['window', 'pairing'] });
  const requested: number = server.requests().length;
  await server.close();

  const run = await wireScenario('basic-tool-round', { harness: 'mine', context: 'docs recipe' });
  for await (const step of run.steps()) {
    const result = run.tool(run.tools[0].name).call({});
    step.reply(`${step.session} ${step.input} ${result.text}`);
  }
  const verdict: Verdict = await run.finish();

  const agent: Agent = async (step) => step.input;
  const verdicts: Record<string, Verdict> = await conform.run(() => agent, { scenarios: ['tool-error'] });
  wireTests(['tool-error'], async (each) => each.check(), { harness: 'mine', version: '1.0.0' });
  vitestWireTests([], async (each) => {
    await each.violations();
  }, { timeout: 60_000 });
  return [models, model, window, found, requested, verdict, verdicts].length;
}
