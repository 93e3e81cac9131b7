import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The operator console: built into dist/apps/console and served by the gateway under /console as static files.
// Nothing is fetched from elsewhere at run time, and the page has no inline script (the gateway's CSP forbids it).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../../dist/apps/console', import.meta.url)),
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
  },
});
