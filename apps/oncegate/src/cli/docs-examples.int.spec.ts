import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkContractFile, fingerprintPolicyOf, parseContractFile, validateArguments } from '@oncegate/contracts';
import { importedFileText, importOpenApi, readOpenApiDocument } from '@oncegate/openapi-import';

const DOC = fileURLToPath(new URL('../../../../docs/contracts.md', import.meta.url));

/** The ```yaml blocks of docs/contracts.md that are whole contract files. */
async function contractFilesInDoc(): Promise<string[]> {
  const text = await readFile(DOC, 'utf8');
  return [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1] ?? '').filter((block) => block.startsWith('version: 1'));
}

describe('docs/contracts.md', () => {
  it('given the whole contract files shown in the doc, when checked, then every one is valid', async () => {
    const blocks = await contractFilesInDoc();
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    for (const [index, block] of blocks.entries()) {
      const result = checkContractFile(block, `docs/contracts.md#yaml-${index}`);
      expect(result.ok ? [] : result.issues).toEqual([]);
    }
  });

  it('given the small file of the doc, when used as the code snippet shows, then the results match the comments', async () => {
    const [small = ''] = await contractFilesInDoc();
    const [tool] = parseContractFile(small, 'tools.yaml').tools;
    if (tool === undefined) throw new Error('the doc example declares no tool');
    expect(validateArguments(tool, { name: 'x' })).toEqual([{ pointer: '/value', keyword: 'required', message: 'is required' }]);
    expect(fingerprintPolicyOf(tool)).toEqual({ defaults: { dry_run: false }, exclude: [], secret: [] });
  });

  it('given the OpenAPI document of the import section, when imported, then the contracts are those the doc shows', async () => {
    const text = await readFile(DOC, 'utf8');
    const section = text.slice(text.indexOf('## Importing from OpenAPI'));
    const [openapi = '', contracts = ''] = [...section.matchAll(/```yaml\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-docs-openapi-'));
    try {
      writeFileSync(join(dir, 'orders.yaml'), openapi);
      const written = importedFileText(importOpenApi(await readOpenApiDocument(join(dir, 'orders.yaml'))));
      expect(written.slice(written.indexOf('version: 1\n'))).toBe(contracts);
      expect(written).toContain('#   oncegate vault set ordersToken --kind bearer --bind api.example.com\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
