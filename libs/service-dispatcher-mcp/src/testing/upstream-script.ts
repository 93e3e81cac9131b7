import { fileURLToPath } from 'node:url';
import { bundledScript } from '@oncegate/event-store/worker-entry';

/**
 * The test upstream's entry point (upstream-main.ts) bundled into one plain JavaScript file, kept in the temporary
 * folder ({@link bundledScript}). Started through tsx instead, each upstream process spent about 0.7 s of CPU in the
 * TypeScript loader before it served (bundled: 0.15 s), and the suites start one for most of their MCP tests.
 */
export function upstreamScript(): string {
  return bundledScript(fileURLToPath(new URL('./upstream-main.ts', import.meta.url)));
}
