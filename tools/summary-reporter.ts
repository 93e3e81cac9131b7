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
      let failedHere = 0;
      for (const test of testModule.children.allTests()) {
        const result = test.result();
        if (result.state === 'passed') passed += 1;
        else if (result.state === 'failed') failedHere += 1;
        else if (result.state === 'skipped') {
          skipped.push(`${testModule.moduleId.replace(process.cwd() + '/', '')} > ${test.fullName}: ${result.note ?? 'no reason given'}`);
        }
      }
      // A file that failed outside any test (import error, failing beforeAll) still counts as a failure.
      if (testModule.state() === 'failed' && failedHere === 0) failedHere = 1;
      failed += failedHere;
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
