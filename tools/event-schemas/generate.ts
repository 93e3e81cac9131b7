/**
 * Generates docs/events/: a JSON Schema (draft-07) of the `data` of every stored event type, from the TypeScript type
 * its writer appends, and a README. `npm run events:schemas` writes them; `npm run events:schemas -- --check`
 * changes nothing and exits 1 naming the files that differ from what the types make now.
 *
 * Which types are stored is `STORED_EVENT_TYPES` (libs/domain/src/event-catalog.ts); `EVENT_DATA_SOURCES` below
 * says where the type of each one's data is declared. The two must name the same event types.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  BaseType,
  createFormatter,
  createParser,
  DEFAULT_CONFIG,
  DefinitionType,
  SchemaGenerator,
  type CompletedConfig,
  type Definition,
  type SubNodeParser,
  type SubTypeFormatter,
} from 'ts-json-schema-generator';
import ts from 'typescript';
import { differingFiles as differingGeneratedFiles, syncGeneratedFiles } from '../generated-files';
import { STORED_EVENT_TYPES, type StoredEventType } from '@oncegate/domain';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Where the schemas and the README go, relative to the repository root. */
export const OUTPUT_DIR = 'docs/events';
export const SCHEMA_SUFFIX = '.schema.json';

/** Where the TypeScript type of an event's `data` is declared (exported), relative to the repository root. */
export interface EventDataSource {
  readonly file: string;
  readonly typeName: string;
}

const EVENTS = 'libs/domain/src/events.ts';
const CLAIMS = 'libs/execution-journal/src/intent-claims.ts';
const RUNS = 'libs/host-decisions/src/run-journal.ts';
const SESSIONS = 'libs/service-gateway/src/front/mcp-http-front.ts';
const TOKENS = 'libs/host-principals/src/principal-directory.ts';
const APPROVER_KEYS = 'libs/host-principals/src/approver-directory.ts';
const VAULT = 'libs/vault/src/vault-journal.ts';
const PARKED = 'libs/nest-event-store/src/parked-events.ts';
const SEALS = 'libs/journal/src/seal.ts';
const NOTICES = 'libs/dispatcher-kit/src/channel-notices.ts';

/** Every stored event type and the type of its data. */
export const EVENT_DATA_SOURCES: Readonly<Record<string, EventDataSource>> = {
  ExecutionAccepted: { file: EVENTS, typeName: 'ExecutionAcceptedData' },
  RetryAttached: { file: EVENTS, typeName: 'RetryAttachedData' },
  ApprovalRequested: { file: EVENTS, typeName: 'ApprovalRequestedData' },
  ApprovalGranted: { file: EVENTS, typeName: 'ApprovalDecidedData' },
  ApprovalDenied: { file: EVENTS, typeName: 'ApprovalDecidedData' },
  ExecutionAuthorized: { file: EVENTS, typeName: 'ExecutionAuthorizedData' },
  ExecutionDenied: { file: EVENTS, typeName: 'ExecutionDeniedData' },
  Dispatched: { file: EVENTS, typeName: 'DispatchedData' },
  OutcomeObserved: { file: EVENTS, typeName: 'OutcomeObservedData' },
  AttemptProgressed: { file: EVENTS, typeName: 'AttemptProgressedData' },
  AttemptTaskStarted: { file: EVENTS, typeName: 'AttemptTaskStartedData' },
  AttemptTaskChecked: { file: EVENTS, typeName: 'AttemptTaskCheckedData' },
  OutcomeUnknown: { file: EVENTS, typeName: 'OutcomeUnknownData' },
  StatusQueried: { file: EVENTS, typeName: 'StatusQueriedData' },
  MarkerProbed: { file: EVENTS, typeName: 'MarkerProbedData' },
  ReviewRequired: { file: EVENTS, typeName: 'ReviewRequiredData' },
  ReviewResolved: { file: EVENTS, typeName: 'ReviewResolvedData' },
  ResultDelivered: { file: EVENTS, typeName: 'ResultDeliveredData' },
  ResultDeliveryFailed: { file: EVENTS, typeName: 'ResultDeliveryFailedData' },
  AnswerGiven: { file: EVENTS, typeName: 'AnswerGivenData' },
  ExecutionCancelled: { file: EVENTS, typeName: 'ExecutionCancelledData' },
  CancellationRequested: { file: EVENTS, typeName: 'CancellationRequestedData' },
  ExecutionExpired: { file: EVENTS, typeName: 'ExecutionExpiredData' },
  IntentClaimed: { file: CLAIMS, typeName: 'IntentClaim' },
  IdempotencyKeyClaimed: { file: CLAIMS, typeName: 'IdempotencyKeyClaimedData' },
  RunStarted: { file: RUNS, typeName: 'RunStartedData' },
  RunGranted: { file: RUNS, typeName: 'RunGrantedData' },
  RunEnded: { file: RUNS, typeName: 'RunEndedData' },
  SessionStarted: { file: SESSIONS, typeName: 'SessionStartedData' },
  SessionClosed: { file: SESSIONS, typeName: 'SessionClosedData' },
  AgentTokenIssued: { file: TOKENS, typeName: 'PrincipalTokenIssuedData' },
  AgentTokenRevoked: { file: TOKENS, typeName: 'PrincipalTokenRevokedData' },
  ApproverTokenIssued: { file: TOKENS, typeName: 'PrincipalTokenIssuedData' },
  ApproverTokenRevoked: { file: TOKENS, typeName: 'PrincipalTokenRevokedData' },
  ApproverKeyAdded: { file: APPROVER_KEYS, typeName: 'ApproverKeyAddedData' },
  ApproverKeyRevoked: { file: APPROVER_KEYS, typeName: 'ApproverKeyRevokedData' },
  VaultInitialized: { file: VAULT, typeName: 'VaultInitializedData' },
  VaultUnlocked: { file: VAULT, typeName: 'VaultUnlockedData' },
  VaultLocked: { file: VAULT, typeName: 'VaultLockedData' },
  CredentialStored: { file: VAULT, typeName: 'CredentialStoredData' },
  CredentialRemoved: { file: VAULT, typeName: 'CredentialRemovedData' },
  EventParked: { file: PARKED, typeName: 'EventParkedData' },
  ParkedReplayRequested: { file: PARKED, typeName: 'ParkedReplayRequestedData' },
  ParkedEventHandled: { file: PARKED, typeName: 'ParkedEventHandledData' },
  ParkedReplayFailed: { file: PARKED, typeName: 'ParkedReplayFailedData' },
  ChannelNoticed: { file: NOTICES, typeName: 'ChannelNoticedData' },
  JournalSealed: { file: SEALS, typeName: 'JournalSealedData' },
};

/**
 * Unions and maps in the sources that pair event types with their data types: the table above must agree with
 * them, so a data type cannot be put beside the wrong event type.
 */
const PAIRINGS: readonly { readonly file: string; readonly typeName: string; readonly shape: 'union' | 'map' }[] = [
  { file: EVENTS, typeName: 'ExecutionEvent', shape: 'union' },
  { file: VAULT, typeName: 'VaultEvent', shape: 'union' },
  { file: PARKED, typeName: 'ParkedEventDataOf', shape: 'map' },
];

/**
 * Types from outside the repository that the generator cannot follow (the MCP SDK's are inferred from zod schemas),
 * with the schema that stands for them.
 */
const FOREIGN_TYPES: Readonly<Record<string, { readonly module: RegExp; readonly schema: Definition }>> = {
  JSONRPCMessage: {
    module: /[\\/]@modelcontextprotocol[\\/]sdk[\\/]/,
    schema: {
      type: 'object',
      description: 'A JSON-RPC 2.0 message of the Model Context Protocol (the MCP SDK\'s `JSONRPCMessage`), kept as it arrived.',
      properties: {
        jsonrpc: { type: 'string', const: '2.0' },
        id: { type: ['string', 'number'] },
        method: { type: 'string' },
        params: { type: 'object' },
      },
      required: ['jsonrpc'],
      additionalProperties: true,
    },
  },
};

/** Stands for a foreign type: its schema is given, not derived. */
class ForeignType extends BaseType {
  constructor(
    readonly name: string,
    readonly schema: Definition,
  ) {
    super();
  }

  getId(): string {
    return `foreign-${this.name}`;
  }
}

class ForeignTypeParser implements SubNodeParser {
  constructor(private readonly checker: ts.TypeChecker) {}

  supportsNode(node: ts.Node): boolean {
    return this.foreignNameOf(node) !== undefined;
  }

  createType(node: ts.Node): BaseType {
    const name = this.foreignNameOf(node)!;
    return new DefinitionType(name, new ForeignType(name, FOREIGN_TYPES[name]!.schema));
  }

  private foreignNameOf(node: ts.Node): string | undefined {
    if (!ts.isTypeReferenceNode(node)) return undefined;
    const name = ts.isIdentifier(node.typeName) ? node.typeName.text : node.typeName.right.text;
    const foreign = FOREIGN_TYPES[name];
    if (foreign === undefined) return undefined;
    let symbol = this.checker.getSymbolAtLocation(node.typeName);
    if (symbol !== undefined && symbol.flags & ts.SymbolFlags.Alias) symbol = this.checker.getAliasedSymbol(symbol);
    const declared = symbol?.declarations?.some((declaration) => foreign.module.test(declaration.getSourceFile().fileName)) ?? false;
    return declared ? name : undefined;
  }
}

class ForeignTypeFormatter implements SubTypeFormatter {
  supportsType(type: BaseType): boolean {
    return type instanceof ForeignType;
  }

  getDefinition(type: BaseType): Definition {
    return structuredClone((type as ForeignType).schema);
  }

  getChildren(): BaseType[] {
    return [];
  }
}

const GENERATOR_CONFIG: CompletedConfig = {
  ...DEFAULT_CONFIG,
  expose: 'export',
  topRef: false,
  jsDoc: 'extended',
  // Objects stay open: a field added later (always optional within a schema version) does not make an older schema
  // refuse the event. The test checks that what the code writes carries no field its type does not declare.
  additionalProperties: true,
  sortProps: false,
  skipTypeCheck: true,
};

function compilerOptions(): ts.CompilerOptions {
  const file = join(ROOT, 'tsconfig.base.json');
  const read = ts.readConfigFile(file, (path) => ts.sys.readFile(path));
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, ROOT, { noEmit: true }, file);
  return parsed.options;
}

function exportedDeclaration(program: ts.Program, source: EventDataSource): ts.Node {
  const file = program.getSourceFile(join(ROOT, source.file));
  if (file === undefined) throw new Error(`${source.file} is not part of the program`);
  const found = file.statements.find(
    (statement): statement is ts.InterfaceDeclaration | ts.TypeAliasDeclaration =>
      (ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) &&
      statement.name.text === source.typeName &&
      (ts.getCombinedModifierFlags(statement) & ts.ModifierFlags.Export) !== 0,
  );
  if (found === undefined) throw new Error(`${source.file} exports no interface or type ${source.typeName}`);
  return found;
}

/** The name of the declared type of a node (a type reference's name), for the pairing check. */
function declaredName(type: ts.Type): string | undefined {
  return (type.aliasSymbol ?? type.getSymbol())?.getName();
}

/** Checks the table against the unions and maps in the sources that pair event types with data types. */
function checkPairings(program: ts.Program): void {
  const checker = program.getTypeChecker();
  const problems: string[] = [];
  for (const pairing of PAIRINGS) {
    const node = exportedDeclaration(program, pairing);
    const declared = checker.getTypeAtLocation(node);
    const pairs: [string, string | undefined][] = [];
    if (pairing.shape === 'union') {
      for (const member of declared.isUnion() ? declared.types : [declared]) {
        const typeSymbol = member.getProperty('type');
        const dataSymbol = member.getProperty('data');
        const literal = typeSymbol && checker.getTypeOfSymbolAtLocation(typeSymbol, node);
        if (!literal?.isStringLiteral() || dataSymbol === undefined) {
          problems.push(`${pairing.typeName} in ${pairing.file}: a member without a literal type or data`);
          continue;
        }
        pairs.push([literal.value, declaredName(checker.getTypeOfSymbolAtLocation(dataSymbol, node))]);
      }
    } else {
      for (const property of declared.getProperties()) {
        pairs.push([property.getName(), declaredName(checker.getTypeOfSymbolAtLocation(property, node))]);
      }
    }
    for (const [type, dataType] of pairs) {
      const source = EVENT_DATA_SOURCES[type];
      if (source === undefined) problems.push(`${type} (${pairing.typeName} in ${pairing.file}) has no entry in EVENT_DATA_SOURCES`);
      else if (source.typeName !== dataType || source.file !== pairing.file) {
        problems.push(`${type}: EVENT_DATA_SOURCES names ${source.typeName} in ${source.file}, ${pairing.typeName} pairs it with ${dataType} in ${pairing.file}`);
      }
    }
  }
  if (problems.length > 0) throw new Error(`the event data table disagrees with the sources:\n  ${problems.join('\n  ')}`);
}

/** The catalog and the table name the same event types. */
function checkCatalog(): void {
  const cataloged = new Set(STORED_EVENT_TYPES.map((stored) => stored.type));
  const tabled = new Set(Object.keys(EVENT_DATA_SOURCES));
  const missing = [...cataloged].filter((type) => !tabled.has(type));
  const extra = [...tabled].filter((type) => !cataloged.has(type));
  if (missing.length > 0 || extra.length > 0) {
    throw new Error(
      `STORED_EVENT_TYPES and EVENT_DATA_SOURCES disagree: ${[
        ...missing.map((type) => `${type} has no data type in tools/event-schemas/generate.ts`),
        ...extra.map((type) => `${type} is not in STORED_EVENT_TYPES (libs/domain/src/event-catalog.ts)`),
      ].join('; ')}`,
    );
  }
}

/** What the `$id` of every generated schema starts with; other schemas in the folder are not the generator's. */
export const SCHEMA_ID_PREFIX = 'oncegate:event:';

export function schemaId(stored: StoredEventType): string {
  return `${SCHEMA_ID_PREFIX}${stored.type}:v${stored.schemaVersion}`;
}

export function schemaFileName(type: string): string {
  return `${type}${SCHEMA_SUFFIX}`;
}

/** Sorts the keys of `definitions`, so the file does not depend on the order the generator met the types in. */
function sortedDefinitions(definitions: Record<string, Definition> | undefined): Record<string, Definition> | undefined {
  if (definitions === undefined || Object.keys(definitions).length === 0) return undefined;
  return Object.fromEntries(Object.entries(definitions).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function article(word: string): string {
  return /^[AEIOU]/.test(word) ? 'an' : 'a';
}

function eventSchema(generator: SchemaGenerator, program: ts.Program, stored: StoredEventType): Record<string, unknown> {
  const source = EVENT_DATA_SOURCES[stored.type]!;
  const generated = generator.createSchemaFromNodes([exportedDeclaration(program, source)]) as Record<string, unknown>;
  const { $schema, description, definitions, ...root } = generated as { $schema: string; description?: string; definitions?: Record<string, Definition> };
  const context =
    `The \`data\` of ${article(stored.type)} \`${stored.type}\` event (schema version ${stored.schemaVersion}, on \`${stored.category}-…\` streams), ` +
    `generated from \`${source.typeName}\` in ${source.file}.`;
  const sorted = sortedDefinitions(definitions);
  return {
    $schema,
    $id: schemaId(stored),
    title: `${stored.type} data`,
    description: description === undefined ? context : `${description}\n\n${context}`,
    ...root,
    ...(sorted === undefined ? {} : { definitions: sorted }),
  };
}

function formatJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

const WRITERS: Readonly<Record<string, string>> = {
  execution: 'the execution journal (`libs/execution-journal`), from the decisions of `libs/domain`',
  intent: 'the gateway front, with the execution\'s first events (`libs/execution-journal` intent-claims)',
  idempotency: 'the gateway front, with the execution\'s first events (`libs/execution-journal` intent-claims)',
  run: 'the sessions journal (`libs/host-decisions` run-journal)',
  session: 'the MCP HTTP front (`libs/service-gateway` front/mcp-http-front)',
  agent: '`oncegate agents` (`libs/host-principals` principal-directory)',
  approver: '`oncegate approvers` and `oncegate approvers key` (`libs/host-principals` principal-directory and approver-directory)',
  vault: '`oncegate vault` (`libs/vault` vault-journal)',
  parked: 'a service\'s event consumer and `oncegate parked` (`libs/nest-event-store` parked-events)',
  journal: 'the journal sealer (`libs/service-sealer`, seals defined in `libs/journal`)',
};

function readme(): string {
  const rows = STORED_EVENT_TYPES.map((stored) => {
    const source = EVENT_DATA_SOURCES[stored.type]!;
    return `| \`${stored.type}\` | \`${stored.category}-…\` | ${stored.schemaVersion} | [${schemaFileName(stored.type)}](${schemaFileName(stored.type)}) | \`${source.typeName}\` in \`${source.file}\` |`;
  });
  const categories = [...new Set(STORED_EVENT_TYPES.map((stored) => stored.category))];
  return [
    '# Event schemas',
    '',
    '<!-- Generated by tools/event-schemas/generate.ts (`npm run events:schemas`); edit the TypeScript types, not this folder. -->',
    '',
    'One JSON Schema (draft-07) per event type the journal holds, for the event\'s `data`: so consumers of the',
    'journal or of the event bus, in any language, can validate what they read. Each schema is generated from the',
    'TypeScript type the writer appends, with that type\'s doc comments as descriptions; the list of types is',
    '`STORED_EVENT_TYPES` (`libs/domain/src/event-catalog.ts`).',
    '',
    '- **`$id`** is `oncegate:event:<Type>:v<schemaVersion>`. A change to a payload adds a schema version (and an',
    '  upcaster in the code), never an edit in place; `metadata.schemaVersion` of each event names its version.',
    '- **Required** fields are required, string unions are enums, and `null` is allowed exactly where the writer',
    '  writes it. A field marked optional is absent in events written before it existed.',
    '- **Objects are open** (no `additionalProperties: false`): a field added later, always optional within a schema',
    '  version, does not make an older schema refuse the event. The test checks that what the code writes carries no',
    '  field its type does not declare.',
    '- Instants are ISO-8601 strings (`2026-07-22T10:00:00.000Z`); ids are strings: execution ids `ex_<ULID>`, event',
    '  and token ids UUIDv7, fingerprints `hmac-sha256:<key-id>:<64 hex>`.',
    '',
    '## Event types',
    '',
    '| type | stream | version | schema | TypeScript type |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    'Who appends them, by stream category:',
    '',
    ...categories.map((category) => `- \`${category}-…\`: ${WRITERS[category] ?? '(see the catalog)'}.`),
    '',
    'Other `*.schema.json` files in this folder, whose `$id` does not start with `oncegate:event:`, describe messages',
    'of the event bus that are not journal events; they are written by hand and the generator leaves them alone.',
    '',
    'Adapters keep records of their own beside the events (the KurrentDB adapter\'s `StoreCreated` and `EventIdTaken`',
    'on its private streams); they are not events of the store and never reach a reader.',
    '',
    '## The envelope',
    '',
    'The schemas cover `data` only. Every recorded event carries, beside it (`RecordedEvent` in',
    '`libs/event-store/src/event-store.ts`; the journal export writes the same fields):',
    '',
    '| field | what |',
    '|---|---|',
    '| `id` | UUIDv7 of the event, unique across the store (the same as `metadata.eventId`) |',
    '| `type` | the event type, a key of the table above |',
    '| `streamId` | `<category>-<id>`, e.g. `execution-ex_01J3Z6Y8QK4W5X2V7N9M0P1R2S`, `run-…`, `vault-main`, `journal-seals` |',
    '| `revision` | 0-based position inside its stream |',
    '| `position` | 1-based position in the store\'s global commit order |',
    '| `recordedAt` | ISO-8601 time the store took the append |',
    '| `metadata` | set by the writer, see below |',
    '| `prev`, `hash` | the hash chain: `hash` is SHA-256 (hex) over `prev` (the previous event of the stream\'s `hash`, 64 zeros for revision 0), a newline and the RFC 8785 canonical JSON of `{streamId, revision, id, type, data, metadata, recordedAt}` (`libs/event-store/src/chain.ts`); `JournalSealed` events sign runs of these hashes |',
    '',
    '`metadata` always holds `eventId` (the event\'s id), `actor` (the principal or service that caused it:',
    '`agent:<name>`, `approver:<name>`, `operator:cli`, `service:<name>`), `recordedAt` (the writer\'s clock) and',
    '`schemaVersion` (the version of `data`, the `v` of the schema\'s `$id`). Execution events add `executionId`,',
    '`causationId` (the event or request that caused it, or `null`) and `correlation` (protocol evidence: JSON-RPC id,',
    'MCP session id, SSE event id, transport); run events add `runId`.',
    '',
    '## Regenerate',
    '',
    'After changing an event\'s data type or adding an event type (to `STORED_EVENT_TYPES` and to the table in',
    '`tools/event-schemas/generate.ts`):',
    '',
    '```sh',
    'npm run events:schemas            # rewrites docs/events/',
    'npm run events:schemas -- --check # changes nothing; exits 1 naming the files that differ',
    '```',
    '',
    '`tools/event-schemas/event-schemas.unit.spec.ts` fails while the committed files differ from what the types',
    'make, and validates the events of a real journal against these schemas.',
    '',
  ].join('\n');
}

/** Every file of docs/events/ as the types make it now: file name → content. */
export function generateEventSchemas(): Map<string, string> {
  checkCatalog();
  const files = Object.values(EVENT_DATA_SOURCES).map((source) => join(ROOT, source.file));
  const program = ts.createProgram({ rootNames: [...new Set(files)], options: compilerOptions() });
  checkPairings(program);
  const checker = program.getTypeChecker();
  const parser = createParser(program, GENERATOR_CONFIG, (chain) => chain.addNodeParser(new ForeignTypeParser(checker)));
  const formatter = createFormatter(GENERATOR_CONFIG, (chain) => chain.addTypeFormatter(new ForeignTypeFormatter()));
  const generator = new SchemaGenerator(program, parser, formatter, GENERATOR_CONFIG);
  const output = new Map<string, string>();
  for (const stored of STORED_EVENT_TYPES) output.set(schemaFileName(stored.type), formatJson(eventSchema(generator, program, stored)));
  output.set('README.md', readme());
  return output;
}

/**
 * The event schemas in a folder: the `*.schema.json` files whose `$id` is an event's. Other schemas kept there (of
 * messages on the event bus, written by hand) are left alone.
 */
export function eventSchemaFiles(dir = join(ROOT, OUTPUT_DIR)): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith(SCHEMA_SUFFIX))
    .filter((name) => {
      try {
        const id = (JSON.parse(readFileSync(join(dir, name), 'utf8')) as { $id?: unknown }).$id;
        return typeof id === 'string' && id.startsWith(SCHEMA_ID_PREFIX);
      } catch {
        return false;
      }
    })
    .sort();
}

/** File names whose committed content differs from `expected`: changed, missing or no longer generated. */
export function differingFiles(expected: ReadonlyMap<string, string>, dir = join(ROOT, OUTPUT_DIR)): string[] {
  return differingGeneratedFiles(expected, dir, eventSchemaFiles(dir));
}

function main(args: readonly string[]): number {
  const dir = join(ROOT, OUTPUT_DIR);
  return syncGeneratedFiles(args, { script: 'events:schemas', root: ROOT, outputDir: OUTPUT_DIR, expected: generateEventSchemas(), existing: eventSchemaFiles(dir) });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = main(process.argv.slice(2));
}
