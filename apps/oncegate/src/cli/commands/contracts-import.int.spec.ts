import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkContractFile } from '@oncegate/contracts';
import { EXIT_CODES, type CliIo } from '@oncegate/host-cli';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../cli';

const WORKSHOP = fileURLToPath(new URL('../../../../../libs/openapi-import/fixtures/workshop-3.1.yaml', import.meta.url));
const PETSTORE = fileURLToPath(new URL('../../../../../libs/openapi-import/fixtures/petstore-3.0.yaml', import.meta.url));

function captureIo(): CliIo & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return { stdout: (text) => void (out += text), stderr: (text) => void (err += text), readFile: (path) => readFile(path, 'utf8'), out: () => out, err: () => err };
}

describe('oncegate contracts import openapi', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-contracts-import-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('given an OpenAPI 3.1 document, when imported with --out, then the file is written, the summary lists what was not mapped and the vault commands, and contracts check passes it unchanged', async () => {
    const out = join(dir, 'workshop-tools.yaml');
    const io = captureIo();
    expect(await runCli(['contracts', 'import', 'openapi', WORKSHOP, '--out', out], io)).toBe(EXIT_CODES.ok);
    expect(io.out()).toBe('');
    const summary = io.err().split('\n');
    expect(summary[0]).toBe(`${WORKSHOP}: 24 tools imported (read_only 13, idempotent_write 5, irreversible 6) into ${out}`);
    expect(summary).toContain('not imported (3):');
    expect(summary).toContain("  uploadFile (POST /uploads): request body (required) is not mapped: it is multipart/form-data, and a contract sends JSON");
    expect(summary).toContain(`notes (also written as comments in ${out}, at each tool):`);
    expect(summary).toContain('  subscribe: callbacks (orderEvent) are not mapped: the gateway makes calls, it does not receive them');
    expect(summary).toContain('  oncegate vault set apiKeyHeader --kind header --header X-Workshop-Key --bind api.workshop.example');
    expect(summary).toContain(`check it with: oncegate contracts check ${out}`);

    const check = captureIo();
    expect(await runCli(['contracts', 'check', out], check)).toBe(EXIT_CODES.ok);
    expect(check.out()).toBe(`${out}: 24 tools OK (read_only 13, idempotent_write 5, irreversible 6)\n`);
  });

  it('given no --out, then the contract file goes to standard output and the summary to standard error', async () => {
    const io = captureIo();
    expect(await runCli(['contracts', 'import', 'openapi', PETSTORE, '--tag', 'store'], io)).toBe(EXIT_CODES.ok);
    expect(io.out()).toMatch(/^# Tool contracts imported from .*petstore-3\.0\.yaml \(Petstore 1\.0\.19, OpenAPI 3\.0\.3\) by oncegate contracts import openapi\.\n/);
    const checked = checkContractFile(io.out(), 'stdout.yaml');
    expect(checked.ok && checked.contract.tools.map((tool) => tool.name)).toEqual(['getInventory', 'placeOrder', 'getOrderById', 'deleteOrder']);
    expect(io.err().split('\n')[0]).toBe(`${PETSTORE}: 4 tools imported (read_only 2, idempotent_write 1, irreversible 1)`);
  });

  it('given a document that is not valid OpenAPI, then it says what is wrong and where, writes nothing and exits 1', async () => {
    const file = join(dir, 'broken.yaml');
    writeFileSync(file, 'openapi: 3.0.3\ninfo: { title: Broken, version: "1" }\npaths:\n  /things:\n    post:\n      operationId: makeThing\n      responses: { "200": { descriptio: ok } }\n');
    const out = join(dir, 'tools.yaml');
    const io = captureIo();
    expect(await runCli(['contracts', 'import', 'openapi', file, '--out', out], io)).toBe(EXIT_CODES.failed);
    expect(io.err()).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: not a valid OpenAPI document:\n  REQUIRED must have required property 'description'\n`));
    expect(io.err()).toContain('"operationId": "makeThing"');
    expect(existsSync(out)).toBe(false);
  });

  it('given an unknown --tag or --operation, then it is a usage error listing the known ones', async () => {
    const tag = captureIo();
    expect(await runCli(['contracts', 'import', 'openapi', PETSTORE, '--tag', 'pets'], tag)).toBe(EXIT_CODES.usage);
    expect(tag.err().split('\n')[0]).toBe("oncegate: contracts import openapi: unknown tag 'pets' (did you mean 'pet'?); the document's tags: pet, store, user");
    expect(tag.err()).toContain("Run 'oncegate contracts import openapi --help' for its options.");
    const operation = captureIo();
    expect(await runCli(['contracts', 'import', 'openapi', PETSTORE, '--operation', 'getPetById', '--operation', 'getPet'], operation)).toBe(EXIT_CODES.usage);
    expect(operation.err().split('\n')[0]).toMatch(/^oncegate: contracts import openapi: unknown operationId 'getPet'; the document's operationIds: updatePet, addPet, findPetsByStatus, /);
  });

  it('given a document whose server is relative, then it asks for --server (usage), and with it the tools go there', async () => {
    const file = join(dir, 'relative.json');
    writeFileSync(
      file,
      JSON.stringify({ openapi: '3.1.0', info: { title: 'Relative', version: '1' }, servers: [{ url: '/v1' }], paths: { '/ping': { get: { operationId: 'ping', responses: { '200': { description: 'ok' } } } } } }),
    );
    const without = captureIo();
    expect(await runCli(['contracts', 'import', 'openapi', file], without)).toBe(EXIT_CODES.usage);
    expect(without.err().split('\n')[0]).toBe("oncegate: contracts import openapi: the document's server '/v1' is relative (to wherever the document is served); give the API's absolute URL with --server https://…");
    const withServer = captureIo();
    expect(await runCli(['contracts', 'import', 'openapi', file, '--server', 'http://127.0.0.1:9000/v1'], withServer)).toBe(EXIT_CODES.ok);
    expect(withServer.out()).toContain('url: http://127.0.0.1:9000/v1/ping\n');
  });

  it('given an --out that exists, then it is kept (it may hold edits) unless --force', async () => {
    const out = join(dir, 'tools.yaml');
    writeFileSync(out, '# my edits\n');
    const kept = captureIo();
    expect(await runCli(['contracts', 'import', 'openapi', PETSTORE, '--out', out], kept)).toBe(EXIT_CODES.failed);
    expect(kept.err()).toBe(`${out} exists; --force replaces it (and any edits made to it)\n`);
    expect(readFileSync(out, 'utf8')).toBe('# my edits\n');
    expect(await runCli(['contracts', 'import', 'openapi', PETSTORE, '--out', out, '--force'], captureIo())).toBe(EXIT_CODES.ok);
    expect(readFileSync(out, 'utf8')).toMatch(/^# Tool contracts imported from /);
  });

  it('given only operations nothing can be made of, then nothing is written and it exits 1 saying why', async () => {
    const out = join(dir, 'tools.yaml');
    const io = captureIo();
    expect(await runCli(['contracts', 'import', 'openapi', WORKSHOP, '--operation', 'uploadFile', '--out', out], io)).toBe(EXIT_CODES.failed);
    expect(io.err()).toBe(
      `${WORKSHOP}: 0 tools imported\nnot imported (1):\n  uploadFile (POST /uploads): request body (required) is not mapped: it is multipart/form-data, and a contract sends JSON\n` +
        'notes:\n' +
        '  servers: the first, https://api.workshop.example/{version}, is used; ignored: https://sandbox.workshop.example/v2 (--server chooses another)\n' +
        '  webhooks (orderShipped) are not mapped: the gateway makes calls, it does not receive them\n' +
        'nothing written: a contract file needs at least one tool\n',
    );
    expect(existsSync(out)).toBe(false);
  });
});
