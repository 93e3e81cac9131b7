// `oncegate contracts import openapi`: tool contracts written from an OpenAPI 3.0 or 3.1 document. Reading the
// document (a file, or a URL fetched here) is the only I/O; the mapping and the file text are pure.
export { readOpenApiDocument, displaySource, isUrl } from './openapi-document';
export type { OpenApiDocument, OpenApiVersion, ReadDocumentOptions } from './openapi-document';
export { importOpenApi } from './import-openapi';
export type { CredentialSetup, ImportedClass, ImportedTool, ImportOptions, OpenApiImport, OperationRef, SkippedOperation } from './import-openapi';
export type { MappedCredentialKind } from './security-mapping';
export { contractFileText, importedFileText, importSummary } from './contract-yaml';
export { CredentialOptionError, OpenApiDocumentError, ServerUrlError, UnknownSelectionError } from './import-errors';
