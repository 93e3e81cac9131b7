#!/usr/bin/env node
// Launches the TypeScript CLI through tsx: no build step, and the workspace's tsconfig paths
// (@oncegate/*) resolve from wherever the command is run.
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

const root = new URL('../', import.meta.url);
register({ tsconfig: fileURLToPath(new URL('tsconfig.json', root)) });
await import(new URL('apps/gateway/src/cli/main.ts', root).href);
