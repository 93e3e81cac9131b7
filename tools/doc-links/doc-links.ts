/**
 * Checks the links of the repository's Markdown documents as GitHub would follow them: a relative link must name a
 * file or folder of the repository, and its `#fragment` a heading of the target (GitHub's slugs, by github-slugger)
 * or an explicit `<a id>` / `<a name>` anchor; an external link must be a well-formed http(s) or mailto URL. External
 * links are never fetched. Documents are read with marked's lexer, so a link inside a code block or a code span is
 * text, not a link.
 */
import { existsSync, globSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, isAbsolute, join, normalize, relative, sep } from 'node:path';
import GithubSlugger from 'github-slugger';
import { Lexer, type Token, type Tokens } from 'marked';

/** The documents a newcomer reads, relative to the repository's root. */
export const DOCUMENT_PATTERNS = [
  'README.md',
  'CONTRIBUTING.md',
  'docs/**/*.md',
  'examples/**/*.md',
  'apps/*/README.md',
  'libs/*/README.md',
  'deploy/**/*.md',
] as const;

export interface LinkProblem {
  /** The document holding the link, relative to the root, with `/` separators. */
  readonly file: string;
  /** 1-based line of the link in the document. */
  readonly line: number;
  /** The link's destination as written. */
  readonly href: string;
  readonly reason: string;
}

/** The documents `DOCUMENT_PATTERNS` names under `root`, sorted, relative with `/` separators. */
export function documentFiles(root: string, patterns: readonly string[] = DOCUMENT_PATTERNS): string[] {
  const found = new Set<string>();
  for (const pattern of patterns) {
    for (const path of globSync(pattern, { cwd: root })) {
      const file = path.split(sep).join('/');
      if (!file.split('/').includes('node_modules')) found.add(file);
    }
  }
  return [...found].sort();
}

/** Every broken link of `files` (relative to `root`), in file order then line order. */
export function checkDocumentLinks(root: string, files: readonly string[]): LinkProblem[] {
  const documents = new DocumentCache(root);
  const problems: LinkProblem[] = [];
  for (const file of files) {
    const document = documents.get(file);
    if (document === undefined) throw new Error(`${file}: no such document under ${root}`);
    for (const link of document.links) {
      const reason = checkLink(root, file, link.href, documents);
      if (reason !== undefined) problems.push({ file, line: link.line, href: link.href, reason });
    }
  }
  return problems;
}

/** One problem a line, as `file:line: href: reason`. */
export function formatProblems(problems: readonly LinkProblem[]): string {
  return problems.map((problem) => `${problem.file}:${problem.line}: ${problem.href}: ${problem.reason}`).join('\n');
}

interface DocumentLink {
  readonly href: string;
  readonly line: number;
}

interface ParsedDocument {
  readonly links: readonly DocumentLink[];
  /** Heading slugs and explicit anchors. */
  readonly anchors: ReadonlySet<string>;
}

/** Each Markdown document parsed once, whether it is checked or only linked to. */
class DocumentCache {
  private readonly parsed = new Map<string, ParsedDocument>();

  constructor(private readonly root: string) {}

  get(file: string): ParsedDocument | undefined {
    let document = this.parsed.get(file);
    if (document === undefined) {
      const path = join(this.root, file);
      if (!existsSync(path) || !statSync(path).isFile()) return undefined;
      document = parseDocument(readFileSync(path, 'utf8'));
      this.parsed.set(file, document);
    }
    return document;
  }
}

export function parseDocument(markdown: string): ParsedDocument {
  // marked reads line breaks as \n only; positions are looked up in the same text.
  const source = markdown.replace(/\r\n?/g, '\n');
  const tokens = new Lexer({ gfm: true }).lex(source);
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  const links: DocumentLink[] = [];
  // Links are met in document order, so each is looked for after the one before: the line of a repeated link is
  // the line of that occurrence.
  let cursor = 0;
  const lineAt = (raw: string, href: string): number => {
    let at = source.indexOf(raw, cursor);
    if (at < 0) at = source.indexOf(href, cursor);
    if (at < 0) return 0;
    cursor = at;
    return source.slice(0, at).split('\n').length;
  };
  walk(tokens, (token) => {
    switch (token.type) {
      case 'heading':
        anchors.add(slugger.slug(plainText((token as Tokens.Heading).tokens)));
        break;
      case 'html':
        for (const anchor of explicitAnchors((token as Tokens.HTML).text)) anchors.add(anchor);
        break;
      case 'link':
      case 'image': {
        const { href, raw } = token as Tokens.Link | Tokens.Image;
        links.push({ href, line: lineAt(raw, href) });
        break;
      }
      case 'def': {
        // A reference definition, checked even when nothing uses it.
        const { href, raw } = token as Tokens.Def;
        links.push({ href, line: lineAt(raw, href) });
        break;
      }
    }
  });
  // Every link that uses a definition carries its destination again: it is checked once, where it first appears.
  const defined = new Set(
    Object.values((tokens as Token[] & { links: Record<string, { href: string }> }).links).map((definition) => definition.href),
  );
  const seenDefinitions = new Set<string>();
  const unique = links.filter((link) => {
    if (!defined.has(link.href)) return true;
    if (seenDefinitions.has(link.href)) return false;
    seenDefinitions.add(link.href);
    return true;
  });
  return { links: unique, anchors };
}

/** Visits every token, children after their parent, list items, table cells and nested blocks included. */
function walk(tokens: readonly Token[], visit: (token: Token) => void): void {
  for (const token of tokens) {
    visit(token);
    // Code blocks and code spans hold text only: nothing in them is a link or a heading.
    if (token.type === 'code' || token.type === 'codespan') continue;
    if (token.type === 'table') {
      const table = token as Tokens.Table;
      for (const cell of [...table.header, ...table.rows.flat()]) walk(cell.tokens, visit);
      continue;
    }
    if (token.type === 'list') {
      walk((token as Tokens.List).items, visit);
      continue;
    }
    const children = (token as { tokens?: Token[] }).tokens;
    if (children !== undefined) walk(children, visit);
  }
}

/** A heading's text as GitHub's page shows it: code spans' text kept, markup and inline HTML dropped. */
function plainText(tokens: readonly Token[]): string {
  let text = '';
  for (const token of tokens) {
    switch (token.type) {
      case 'html':
      case 'image':
      case 'br':
        break;
      case 'codespan':
      case 'escape':
        text += (token as Tokens.Codespan | Tokens.Escape).text;
        break;
      default: {
        const children = (token as { tokens?: Token[] }).tokens;
        text += children !== undefined ? plainText(children) : decodeEntities((token as { text?: string }).text ?? '');
      }
    }
  }
  return text;
}

const NAMED_ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** The character references marked leaves in text as written, decoded as a browser would. */
function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (reference, name: string) => {
    if (name.startsWith('#')) {
      const code = name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
      return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : reference;
    }
    return NAMED_ENTITIES[name.toLowerCase()] ?? reference;
  });
}

/** `<a id="…">` and `<a name="…">` in an HTML fragment the lexer found. */
function explicitAnchors(html: string): string[] {
  const anchors: string[] = [];
  for (const tag of html.matchAll(/<a\s[^>]*>/gi)) {
    for (const attribute of tag[0].matchAll(/\s(?:id|name)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/gi)) {
      anchors.push(attribute[1] ?? attribute[2] ?? attribute[3] ?? '');
    }
  }
  return anchors.filter((anchor) => anchor.length > 0);
}

const SCHEME = /^([a-z][a-z0-9+.-]*):/i;
/** GitHub's anchors for lines of a file it shows as code: `#L12`, `#L12-L20`. */
const LINE_ANCHOR = /^L\d+(-L\d+)?$/;

/** Why `href`, written in `file`, is broken; `undefined` when it is not. */
function checkLink(root: string, file: string, href: string, documents: DocumentCache): string | undefined {
  if (href.trim() === '') return 'the link has no destination';
  const scheme = SCHEME.exec(href)?.[1]?.toLowerCase();
  if (scheme !== undefined) return checkExternal(href, scheme);
  if (href.startsWith('//')) return 'a link without a scheme leaves the repository: write https://';

  const hash = href.indexOf('#');
  const pathPart = (hash < 0 ? href : href.slice(0, hash)).replace(/\?.*$/, '');
  const fragment = hash < 0 ? undefined : href.slice(hash + 1);
  let decodedPath: string;
  let decodedFragment: string | undefined;
  try {
    decodedPath = decodeURIComponent(pathPart);
    decodedFragment = fragment === undefined ? undefined : decodeURIComponent(fragment);
  } catch {
    return 'the link is not valid percent-encoding';
  }

  // `/path` is the repository's root on GitHub; anything else is relative to the document's folder.
  const target =
    decodedPath === ''
      ? file
      : normalize(decodedPath.startsWith('/') ? decodedPath.slice(1) : join(dirname(file), decodedPath)).split(sep).join('/');
  if (target === '..' || target.startsWith('../') || isAbsolute(target)) return 'the link leaves the repository';
  const path = join(root, target);
  if (!existsSync(path)) return `no file or folder ${relative(root, path).split(sep).join('/')} in the repository`;
  if (decodedFragment === undefined) return undefined;
  if (decodedFragment === '') return 'an empty #anchor';

  if (statSync(path).isDirectory()) return `#${fragment} points into a folder, which has no headings`;
  if (extname(target).toLowerCase() !== '.md') {
    return LINE_ANCHOR.test(decodedFragment) ? undefined : `#${fragment}: ${target} is not Markdown; only line anchors (#L12) reach into it`;
  }
  const document = documents.get(target);
  if (document?.anchors.has(decodedFragment)) return undefined;
  const near = document === undefined ? [] : nearestAnchors(decodedFragment, document.anchors);
  return `no heading or anchor #${fragment} in ${target}${near.length > 0 ? ` (did you mean ${near.map((anchor) => `#${anchor}`).join(', ')}?)` : ''}`;
}

function checkExternal(href: string, scheme: string): string | undefined {
  if (scheme !== 'http' && scheme !== 'https' && scheme !== 'mailto') {
    return `scheme ${scheme}: is not one a reader can follow (http, https, mailto)`;
  }
  if (/\s/.test(href)) return 'a URL holds no white space (write it %20)';
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return 'not a well-formed URL';
  }
  if (scheme === 'mailto') return url.pathname.includes('@') ? undefined : 'a mailto: link names no address';
  if (!/^https?:\/\/[^/?#]/i.test(href) || url.hostname === '') return 'the URL names no host';
  return undefined;
}

/**
 * Anchors of the target that begin with the wanted one (a heading that grew a suffix), or else share its first two or
 * three words, to say what was probably meant.
 */
function nearestAnchors(wanted: string, anchors: ReadonlySet<string>): string[] {
  const longer = [...anchors].filter((anchor) => anchor.startsWith(wanted));
  if (longer.length > 0) return longer.slice(0, 3);
  const words = wanted.split('-').filter((word) => word.length > 0);
  for (let length = Math.min(words.length, 3); length >= Math.min(words.length, 2); length -= 1) {
    const prefix = words.slice(0, length).join('-');
    const near = [...anchors].filter((anchor) => anchor.startsWith(prefix));
    if (near.length > 0) return near.slice(0, 3);
  }
  return [];
}
