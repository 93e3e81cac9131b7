/**
 * The demo target's endpoints and their state: what examples/tools.yaml calls. Pure request → answer logic; the
 * HTTP server, fault rules and the effect log live in demo-target.ts.
 */

/** A request as the endpoints see it: the body already read in full. */
export interface DemoRequest {
  readonly method: string;
  readonly path: string;
  readonly idempotencyKey: string | null;
  readonly body: string;
  readonly at: Date;
}

/** What an endpoint decided: the answer, and whether it changed anything (a side effect). */
export interface DemoAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly effect: boolean;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Endpoints whose requests can have a side effect, as they are keyed in `byEndpoint`. */
export const EFFECT_ENDPOINTS = ['PUT /config/:name', 'PUT /inventory/:sku', 'POST /payments', 'POST /credentials/:name/rotate'] as const;

interface Route {
  readonly method: string;
  /** `METHOD /pattern`, the endpoint's name in the effect log and in fault rules. */
  readonly endpoint: string;
  readonly pattern: RegExp;
  readonly handle: (request: DemoRequest, params: readonly string[]) => DemoAnswer;
}

export interface RouteMatch {
  readonly endpoint: string;
  readonly answer: (request: DemoRequest) => DemoAnswer;
}

interface StoredAnswer {
  readonly fingerprint: string;
  readonly answer: DemoAnswer;
}

const BUILD_ID = /^[0-9]+$/;
const CONFIG_NAME = /^[a-z][a-z0-9_.-]*$/;
const SKU = /^[A-Z0-9-]{3,32}$/;
const CREDENTIAL_NAME = /^[a-z][a-z0-9-]*$/;

function answer(status: number, body: unknown, effect = false, headers?: Record<string, string>): DemoAnswer {
  return headers === undefined ? { status, body, effect } : { status, body, effect, headers };
}

function badRequest(reason: string): DemoAnswer {
  return answer(400, { error: 'bad_request', reason });
}

function notFound(what: string): DemoAnswer {
  return answer(404, { error: 'not_found', reason: what });
}

function parseJsonObject(body: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(body === '' ? '{}' : body);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** The demo's state: configuration entries, stock, payments, credential generations and stored idempotent answers. */
export class DemoEndpoints {
  private configs = new Map<string, { value: string; revision: number }>();
  private inventory = new Map<string, { quantity: number; version: number }>();
  private payments = 0;
  private credentials = new Map<string, number>();
  private idempotentAnswers = new Map<string, StoredAnswer>();

  private readonly routes: readonly Route[] = [
    { method: 'GET', endpoint: 'GET /builds/:id', pattern: /^\/builds\/([^/]+)$/, handle: (_r, [id]) => this.getBuild(id ?? '') },
    { method: 'GET', endpoint: 'GET /builds/:id/log', pattern: /^\/builds\/([^/]+)\/log$/, handle: (_r, [id]) => this.getBuildLog(id ?? '') },
    { method: 'PUT', endpoint: 'PUT /config/:name', pattern: /^\/config\/([^/]+)$/, handle: (r, [name]) => this.putConfig(r, name ?? '') },
    { method: 'GET', endpoint: 'GET /config/:name', pattern: /^\/config\/([^/]+)$/, handle: (_r, [name]) => this.getConfig(name ?? '') },
    { method: 'GET', endpoint: 'GET /inventory/:sku', pattern: /^\/inventory\/([^/]+)$/, handle: (_r, [sku]) => this.getInventory(sku ?? '') },
    { method: 'PUT', endpoint: 'PUT /inventory/:sku', pattern: /^\/inventory\/([^/]+)$/, handle: (r, [sku]) => this.putInventory(r, sku ?? '') },
    { method: 'POST', endpoint: 'POST /payments', pattern: /^\/payments$/, handle: (r) => this.postPayment(r) },
    {
      method: 'POST',
      endpoint: 'POST /credentials/:name/rotate',
      pattern: /^\/credentials\/([^/]+)\/rotate$/,
      handle: (r, [name]) => this.rotateCredential(r, name ?? ''),
    },
  ];

  /** The endpoint for a method and path; `undefined` when no path matches, a 405 answer when only the method is wrong. */
  route(method: string, path: string): RouteMatch | undefined {
    let pathKnown = false;
    for (const route of this.routes) {
      const found = route.pattern.exec(path);
      if (found === null) continue;
      pathKnown = true;
      if (route.method !== method) continue;
      const params = found.slice(1).map((param) => safeDecode(param));
      return { endpoint: route.endpoint, answer: (request) => route.handle(request, params) };
    }
    if (!pathKnown) return undefined;
    return { endpoint: `${method} ${path}`, answer: () => answer(405, { error: 'method_not_allowed' }) };
  }

  reset(): void {
    this.configs = new Map();
    this.inventory = new Map();
    this.payments = 0;
    this.credentials = new Map();
    this.idempotentAnswers = new Map();
  }

  private getBuild(id: string): DemoAnswer {
    if (!BUILD_ID.test(id)) return notFound(`no build '${id}'`);
    const number = Number(id);
    const status = number % 10 === 7 ? 'failed' : number % 10 === 9 ? 'running' : 'passed';
    return answer(200, { build_id: id, status, commit: (number * 2_654_435_761).toString(16).padStart(8, '0').slice(-8) });
  }

  private getBuildLog(id: string): DemoAnswer {
    if (!BUILD_ID.test(id)) return notFound(`no build '${id}'`);
    return answer(200, `build ${id}\nstep 1/2 compile: ok\nstep 2/2 test: ok\n`);
  }

  private getConfig(name: string): DemoAnswer {
    const entry = this.configs.get(name);
    return entry === undefined ? notFound(`no config entry '${name}'`) : answer(200, { name, ...entry });
  }

  /** Idempotent write that honours `Idempotency-Key`: a repeated key gets the stored answer and changes nothing. */
  private putConfig(request: DemoRequest, name: string): DemoAnswer {
    const key = request.idempotencyKey;
    const fingerprint = `${request.method} ${request.path} ${request.body}`;
    if (key !== null) {
      const stored = this.idempotentAnswers.get(key);
      if (stored !== undefined) {
        if (stored.fingerprint !== fingerprint) {
          return answer(422, { error: 'idempotency_key_reused', reason: 'this Idempotency-Key was used with a different request' });
        }
        return { ...stored.answer, effect: false, headers: { ...stored.answer.headers, 'idempotent-replayed': 'true' } };
      }
    }
    if (!CONFIG_NAME.test(name)) return notFound(`'${name}' is not a config entry name`);
    const body = parseJsonObject(request.body);
    if (body === undefined || typeof body['value'] !== 'string') return badRequest('expected a JSON object with a string "value"');
    const options = body['options'];
    const dryRun = typeof options === 'object' && options !== null && (options as Record<string, unknown>)['dry_run'] === true;
    let result: DemoAnswer;
    if (dryRun) {
      result = answer(200, { name, value: body['value'], applied: false, dry_run: true });
    } else {
      const revision = (this.configs.get(name)?.revision ?? 0) + 1;
      this.configs.set(name, { value: body['value'], revision });
      result = answer(200, { name, value: body['value'], revision, applied: true }, true);
    }
    if (key !== null) this.idempotentAnswers.set(key, { fingerprint, answer: result });
    return result;
  }

  private getInventory(sku: string): DemoAnswer {
    if (!SKU.test(sku)) return notFound(`'${sku}' is not a SKU`);
    // Every well-formed SKU exists; one never written has no stock at version 0.
    const item = this.inventory.get(sku) ?? { quantity: 0, version: 0 };
    return answer(200, { sku, ...item });
  }

  /** Conditional write: applied only when `expected_version` is the current version, which it then bumps. */
  private putInventory(request: DemoRequest, sku: string): DemoAnswer {
    if (!SKU.test(sku)) return notFound(`'${sku}' is not a SKU`);
    const body = parseJsonObject(request.body);
    if (body === undefined || !isCount(body['quantity']) || !isCount(body['expected_version'])) {
      return badRequest('expected { "quantity": integer >= 0, "expected_version": integer >= 0 }');
    }
    const current = this.inventory.get(sku) ?? { quantity: 0, version: 0 };
    if (current.version !== body['expected_version']) {
      return answer(409, { error: 'version_conflict', sku, expected_version: body['expected_version'], version: current.version });
    }
    const next = { quantity: body['quantity'], version: current.version + 1 };
    this.inventory.set(sku, next);
    return answer(200, { sku, ...next }, true);
  }

  /** Irreversible, and deliberately ignores `Idempotency-Key`: every request is a new charge. */
  private postPayment(request: DemoRequest): DemoAnswer {
    const body = parseJsonObject(request.body);
    const amount = body?.['amount_cents'];
    if (body === undefined || typeof amount !== 'number' || !Number.isInteger(amount) || amount < 1) {
      return badRequest('expected a JSON object with a positive integer "amount_cents"');
    }
    this.payments += 1;
    const currency = typeof body['currency'] === 'string' ? body['currency'] : 'EUR';
    const reference = typeof body['reference'] === 'string' ? body['reference'] : null;
    const paymentId = `pay_${String(this.payments).padStart(6, '0')}`;
    return answer(201, { payment_id: paymentId, reference, amount_cents: amount, currency, status: 'captured' }, true);
  }

  /** Irreversible: every request makes a new generation (the old credential stops working). */
  private rotateCredential(request: DemoRequest, name: string): DemoAnswer {
    if (!CREDENTIAL_NAME.test(name)) return notFound(`'${name}' is not a credential name`);
    const generation = (this.credentials.get(name) ?? 0) + 1;
    this.credentials.set(name, generation);
    return answer(200, { name, generation, rotated_at: request.at.toISOString() }, true);
  }
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
