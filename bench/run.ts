/**
 * Benchmarks print tables; they never assert. `npm run bench -- <name> [options]`.
 */
const benches: Record<string, () => Promise<{ run(argv: string[]): Promise<void> }>> = {
  store: () => import('./store.bench'),
  gateway: () => import('./gateway.bench'),
  journal: () => import('./journal.bench'),
  split: () => import('./split.bench'),
  relay: () => import('./relay.bench'),
  mcp: () => import('./mcp.bench'),
  peers: () => import('./peers.bench'),
  'executions-search': () => import('./executions-search.bench'),
};

async function main(): Promise<void> {
  const [name, ...rest] = process.argv.slice(2);
  const names = Object.keys(benches);
  if (name === undefined || name === '--help') {
    process.stdout.write(`usage: npm run bench -- <${names.join('|')}> [options]\n`);
    process.exit(name === undefined ? 2 : 0);
  }
  const load = benches[name];
  if (load === undefined) {
    process.stderr.write(`unknown benchmark '${name}'; choose one of: ${names.join(', ')}\n`);
    process.exit(2);
  }
  await (await load()).run(rest);
}

main().catch((error) => {
  process.stderr.write(`${(error as Error).stack ?? error}\n`);
  process.exit(1);
});
