/**
 * Why an import cannot go on. Each names what is wrong and what to do; none quotes a credential (a document's
 * URL is shown without its user info and query, see `displaySource`).
 */

/** The document cannot be read, or is not a valid OpenAPI 3.0 or 3.1 document. */
export class OpenApiDocumentError extends Error {
  readonly kind = 'openapi_document_invalid' as const;

  constructor(
    /** The document as the messages show it. */
    readonly source: string,
    /** One line (or a few, with the excerpt the validator shows) per problem. */
    readonly problems: readonly string[],
  ) {
    super(`${source}: ${problems.join('\n')}`);
    this.name = 'OpenApiDocumentError';
  }
}

/** A `--tag` or `--operation` the document does not have. */
export class UnknownSelectionError extends Error {
  readonly kind = 'openapi_selection_unknown' as const;

  constructor(
    readonly what: 'tag' | 'operationId',
    readonly unknown: readonly string[],
    /** Everything the document has of that kind, in its order. */
    readonly known: readonly string[],
    readonly suggestions: ReadonlyMap<string, string>,
  ) {
    const named = unknown.map((name) => `'${name}'${suggestions.has(name) ? ` (did you mean '${suggestions.get(name)}'?)` : ''}`).join(', ');
    const list = known.length === 0 ? `the document has no ${what === 'tag' ? 'tags' : 'operationIds'}` : `the document's ${what === 'tag' ? 'tags' : 'operationIds'}: ${known.join(', ')}`;
    super(`unknown ${what}${unknown.length === 1 ? '' : 's'} ${named}; ${list}`);
    this.name = 'UnknownSelectionError';
  }
}

/** No absolute http(s) URL to send the requests to: the document's server is relative or missing, or `--server` is not one. */
export class ServerUrlError extends Error {
  readonly kind = 'openapi_server_invalid' as const;

  constructor(readonly reason: string) {
    super(reason);
    this.name = 'ServerUrlError';
  }
}

/** `--credential` is not a credential reference, or cannot stand for every scheme the selected operations use. */
export class CredentialOptionError extends Error {
  readonly kind = 'openapi_credential_invalid' as const;

  constructor(readonly reason: string) {
    super(reason);
    this.name = 'CredentialOptionError';
  }
}
