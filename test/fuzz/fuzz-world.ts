import { readFileSync, writeFileSync } from 'node:fs';
import { startDemoTargetProcess } from '../support/demo-target-process';
import { gatewayFolder, startGatewayProcess } from '../support/gateway-process';
import { JournalFollower } from '../support/journal-follower';
import type { FuzzReport, FuzzWorld } from './fuzz-front';

/** Sessions the fuzz gateway keeps in memory for its one agent. */
const SESSIONS_PER_AGENT = 10;

/** The fuzz gateway's V8 old-space limit. */
const HEAP_LIMIT_MIB = 64;

/** The fuzz gateway's V8 semi-space limit (the young generation is a few of them). */
const SEMI_SPACE_MIB = 16;

/** The gateway's request limit in the fuzz configuration: oversized frames are built past it. */
const MAX_REQUEST_BYTES = 64 * 1024;

/** The demo target and one gateway process on a fresh data folder with the end-to-end tools. */
export async function startFuzzWorld(): Promise<FuzzWorld & { readonly maxRequestBytes: number; stop(): Promise<void> }> {
  const target = await startDemoTargetProcess();
  const folder = await gatewayFolder(target.url, { max_request_bytes: `${MAX_REQUEST_BYTES}` });
  // A small session cache fills within the warm-up, so growth after it is a leak, not the cache filling up to
  // its cap (the cap itself is proven by the sessions tests).
  const config = readFileSync(folder.configFile, 'utf8');
  writeFileSync(folder.configFile, config.replace('path: /mcp }', `path: /mcp, sessions_per_agent: ${SESSIONS_PER_AGENT} }`));
  // A bounded heap, as an operator would run it: V8 then collects instead of growing its heap lazily, so what
  // RSS still gains after the warm-up is memory the gateway keeps (a leak), and a leak ends the run out of memory.
  // The young generation is bounded too: on Node 24 V8 grows it under allocation pressure up to 128 MiB whatever
  // the old-space limit, and the pages it touched stay resident, which alone added ~90 MiB of RSS over 8,000
  // frames while the live heap stayed flat at ~33 MiB (docs/runtime.md, "Memory").
  const gateway = await startGatewayProcess(folder, {
    NODE_OPTIONS: `--max-old-space-size=${HEAP_LIMIT_MIB} --max-semi-space-size=${SEMI_SPACE_MIB}`,
  });
  const journal = new JournalFollower(folder.dataDir);
  return {
    gateway,
    target,
    journal,
    maxRequestBytes: MAX_REQUEST_BYTES,
    async stop() {
      await gateway.stop();
      await journal.close();
      await target.stop();
      folder.dispose();
    },
  };
}

export interface FuzzVerdict {
  readonly problems: string[];
}

/** What the run broke: hangs, 5xx, anything dispatched or accepted, memory above its baseline by more than the slack. */
export function fuzzPassed(report: FuzzReport, slackMiB: number): FuzzVerdict {
  const problems: string[] = [];
  const hangs = report.rows.reduce((sum, row) => sum + row['no answer'], 0);
  const errors = report.rows.reduce((sum, row) => sum + row['5xx'], 0);
  if (hangs > 0) problems.push(`${hangs} request(s) not answered within the bound`);
  if (errors > 0) problems.push(`${errors} request(s) answered with a 5xx`);
  if (report.executionsAccepted > 0) problems.push(`${report.executionsAccepted} ExecutionAccepted appended for invalid frames`);
  if (report.targetRequests > 0) problems.push(`${report.targetRequests} request(s) reached the target`);
  const growthMiB = (report.rssAfterKiB - report.rssWarmKiB) / 1024;
  if (growthMiB > slackMiB) problems.push(`gateway RSS grew by ${growthMiB.toFixed(1)} MiB over its baseline (allowed ${slackMiB} MiB)`);
  return { problems };
}
