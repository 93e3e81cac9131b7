import type { Reporter, TestModule } from 'vitest/node';

/**
 * Ends every run with one plain line CI can count: `N passed, N failed, N skipped`.
 * Each skipped test is listed with the reason it gave through `ctx.skip(reason)`.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    const skipped: string[] = [];
    for (const testModule of testModules) {
      if (testModule.state() === 'failed' && [...testModule.children.allTests()].length === 0) failed += 1;
      for (const test of testModule.children.allTests()) {
        const result = test.result();
        if (result.state === 'passed') passed += 1;
        else if (result.state === 'failed') failed += 1;
        else if (result.state === 'skipped') {
          skipped.push(`${testModule.moduleId.replace(process.cwd() + '/', '')} > ${test.fullName}: ${result.note ?? 'no reason given'}`);
        }
      }
    }
    failed += unhandledErrors.length;
    const out = process.stdout;
    if (skipped.length > 0) {
      out.write('\nSkipped tests and why:\n');
      for (const line of skipped) out.write(`  - ${line}\n`);
    }
    out.write(`\n${passed} passed, ${failed} failed, ${skipped.length} skipped\n`);
  }
}
