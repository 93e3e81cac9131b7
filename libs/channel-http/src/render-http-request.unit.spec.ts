import { describe, expect, it } from 'vitest';
import { HttpRenderError, renderHttpRequest } from './render-http-request';
import { httpTool } from './test-tools';

const EXECUTION = 'ex_01JZ8Q3W5V6X7Y8Z9A0B1C2D3E';

const setConfig = httpTool(`
class: idempotent_write
input_schema:
  type: object
  properties:
    name: { type: string }
    value: { type: string }
    count: { type: integer }
    note: { type: string }
    options:
      type: object
      properties:
        dry_run: { type: boolean, default: false }
  required: [name, value]
http:
  method: PUT
  url: http://127.0.0.1:8790/config/{{args.name}}?note={{args.note}}&run={{execution.id}}#ignored
  headers:
    X-Note: "note {{args.note}}"
    X-Trace: "{{execution.id}}"
  body:
    value: "{{args.value}}"
    count: "{{args.count}}"
    label: "config {{args.name}} = {{args.value}}"
    options: "{{args.options}}"
    note: "{{args.note}}"
    tags: ["{{args.note}}", literal]
  idempotency_header: Idempotency-Key
`);

function bodyOf(rendered: { body: string | undefined }): unknown {
  return rendered.body === undefined ? undefined : JSON.parse(rendered.body);
}

describe('renderHttpRequest', () => {
  it('given a whole-template body string, then the argument keeps its JSON type; text templates are interpolated', () => {
    const rendered = renderHttpRequest(setConfig, { name: 'db.pool', value: '20', count: 3, note: 'n' }, EXECUTION);

    expect(bodyOf(rendered)).toEqual({
      value: '20',
      count: 3,
      label: 'config db.pool = 20',
      options: { dry_run: false },
      note: 'n',
      tags: ['n', 'literal'],
    });
  });

  it('given an absent optional argument, then its body field and header are left out, an array keeps its position, and the URL gets empty text', () => {
    const rendered = renderHttpRequest(setConfig, { name: 'db', value: 'x' }, EXECUTION);

    expect(bodyOf(rendered)).toEqual({ value: 'x', label: 'config db = x', options: { dry_run: false }, tags: [null, 'literal'] });
    expect(rendered.headers).not.toHaveProperty('X-Note');
    expect(rendered.url).toBe(`http://127.0.0.1:8790/config/db?note=&run=${EXECUTION}`);
  });

  it('given defaults in the input schema, then they are filled in like the fingerprint fills them, without replacing values', () => {
    expect(bodyOf(renderHttpRequest(setConfig, { name: 'a', value: 'b', options: {} }, EXECUTION))).toMatchObject({ options: { dry_run: false } });
    expect(bodyOf(renderHttpRequest(setConfig, { name: 'a', value: 'b', options: { dry_run: true } }, EXECUTION))).toMatchObject({
      options: { dry_run: true },
    });
  });

  it('given URL arguments with reserved characters, then each is percent-encoded and can add no segment or parameter', () => {
    const rendered = renderHttpRequest(setConfig, { name: "a/b?c=d&e#f !'()*", value: 'v', note: 'x&admin=1' }, EXECUTION);

    expect(rendered.url).toBe(`http://127.0.0.1:8790/config/a%2Fb%3Fc%3Dd%26e%23f%20%21%27%28%29%2A?note=x%26admin%3D1&run=${EXECUTION}`);
  });

  it.each([['..'], ['.'], ['']])('given an argument that makes the path segment %j, then rendering is refused', (name) => {
    const error = catchError(() => renderHttpRequest(setConfig, { name, value: 'v' }, EXECUTION));

    expect(error).toBeInstanceOf(HttpRenderError);
    expect(error).toMatchObject({ kind: 'http_render', tool: 'test_tool', where: 'url' });
  });

  it('given an argument that spells a dot segment percent-encoded, then its % is encoded too and it stays data', () => {
    expect(renderHttpRequest(setConfig, { name: '%2e%2E', value: 'v' }, EXECUTION).url).toMatch(/\/config\/%252e%252E\?/);
  });

  it('given an idempotency header, then it carries the execution id; a JSON body gets content-type application/json', () => {
    const rendered = renderHttpRequest(setConfig, { name: 'a', value: 'b' }, EXECUTION);

    expect(rendered.headers).toMatchObject({ 'Idempotency-Key': EXECUTION, 'X-Trace': EXECUTION, 'content-type': 'application/json' });
    expect(rendered.method).toBe('PUT');
  });

  it('given the contract sets a content type, then it is kept and no second one is added', () => {
    const tool = httpTool(`
class: irreversible
input_schema: { type: object, properties: { v: { type: string } } }
http:
  method: POST
  url: http://127.0.0.1:8790/things
  headers: { Content-Type: application/merge-patch+json }
  body: { v: "{{args.v}}" }
`);
    const rendered = renderHttpRequest(tool, { v: 'x' }, EXECUTION);

    expect(rendered.headers).toEqual({ 'Content-Type': 'application/merge-patch+json' });
    expect(rendered.body).toBe('{"v":"x"}');
  });

  it('given a tool without a body, then nothing is sent as body and no content type is added', () => {
    const tool = httpTool(`
class: read_only
input_schema: { type: object, properties: { id: { type: string } }, required: [id] }
http: { method: GET, url: "http://127.0.0.1:8790/builds/{{args.id}}" }
`);
    const rendered = renderHttpRequest(tool, { id: '42' }, EXECUTION);

    expect(rendered).toEqual({ method: 'GET', url: 'http://127.0.0.1:8790/builds/42', headers: {}, body: undefined });
  });

  it('given a header value with a line break, then rendering is refused without quoting the value', () => {
    const error = catchError(() => renderHttpRequest(setConfig, { name: 'a', value: 'b', note: 'x\r\nX-Evil: secret-value' }, EXECUTION));

    expect(error).toMatchObject({ kind: 'http_render', where: 'headers.X-Note' });
    expect(String((error as Error).message)).not.toContain('secret-value');
  });

  it('given non-string values in text positions, then they are written as JSON text', () => {
    const rendered = renderHttpRequest(setConfig, { name: 'a', value: 'b', count: 7, note: 'n' }, EXECUTION);
    const tool = httpTool(`
class: read_only
input_schema: { type: object, properties: { n: { type: integer }, flag: { type: boolean } } }
http: { method: GET, url: "http://127.0.0.1:8790/items/{{args.n}}?flag={{args.flag}}" }
`);

    expect(renderHttpRequest(tool, { n: 5, flag: true }, EXECUTION).url).toBe('http://127.0.0.1:8790/items/5?flag=true');
    expect(bodyOf(rendered)).toMatchObject({ count: 7 });
  });

  it('given an SSH tool, then rendering is refused', () => {
    const ssh = { ...setConfig, channel: 'ssh', request: { kind: 'ssh' } } as unknown as typeof setConfig;

    expect(catchError(() => renderHttpRequest(ssh, {}, EXECUTION))).toMatchObject({ kind: 'http_render', where: 'channel' });
  });
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
