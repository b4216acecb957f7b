// A static file server for the built web app, bound to 127.0.0.1 only.
//   node scripts/static-server.mjs DIR [PORT]   (PORT 0 or absent: any free port)
// Used by scripts/serve.sh, scripts/bench-first-frame.mjs and the browser tests
// (import { startServer }).
// It answers like a usual static host (nginx with gzip_static): every file carries an ETag and a
// Last-Modified date with "Cache-Control: no-cache", so a browser revalidates on each load and a
// reload gets "304 Not Modified" and reuses its cached copy (and, for stagemem.wasm, the compiled
// code the browser keeps beside it); a FILE.gz next to FILE (scripts/build-site.sh writes them) is
// sent instead of FILE, with Content-Encoding: gzip, to a client that accepts gzip.
import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";

const contentTypes = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json",
  ".png": "image/png",
  ".css": "text/css; charset=utf-8",
};

// The .gz copy when the client accepts gzip and the copy is not older than the file; else null.
async function gzipCopy(request, file, fileStat) {
  if (!/\bgzip\b/.test(request.headers["accept-encoding"] ?? "")) return null;
  try {
    const copy = await stat(`${file}.gz`);
    return copy.isFile() && copy.mtimeMs >= fileStat.mtimeMs ? { path: `${file}.gz`, stat: copy } : null;
  } catch {
    return null;
  }
}

export function startServer(directory, port = 0) {
  const root = resolve(directory);
  const server = createServer(async (request, response) => {
    const path = decodeURIComponent(new URL(request.url, "http://127.0.0.1").pathname);
    const file = normalize(join(root, path.endsWith("/") ? path + "index.html" : path));
    if (file !== root && !file.startsWith(root + sep)) {
      response.writeHead(403).end("forbidden");
      return;
    }
    try {
      const fileStat = await stat(file);
      if (!fileStat.isFile()) throw new Error("not a file");
      const gzip = await gzipCopy(request, file, fileStat);
      const sent = gzip ?? { path: file, stat: fileStat };
      // nginx's form: modification time and size in hex (the .gz copy's own when it is sent).
      const etag = `"${Math.floor(sent.stat.mtimeMs / 1000).toString(16)}-${sent.stat.size.toString(16)}"`;
      const headers = {
        "Content-Type": contentTypes[extname(file)] ?? "application/octet-stream",
        "Cache-Control": "no-cache",
        "ETag": etag,
        "Last-Modified": sent.stat.mtime.toUTCString(),
        "Vary": "Accept-Encoding",
      };
      if (gzip) headers["Content-Encoding"] = "gzip";
      if (request.headers["if-none-match"] === etag) {
        response.writeHead(304, headers).end();
        return;
      }
      const body = await readFile(sent.path);
      response.writeHead(200, { ...headers, "Content-Length": body.length });
      response.end(request.method === "HEAD" ? undefined : body);
    } catch {
      response.writeHead(404).end("not found");
    }
  });
  return new Promise((resolvePromise, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolvePromise(server));
  });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [directory, portText = "0"] = process.argv.slice(2);
  if (!directory) {
    console.error("usage: node scripts/static-server.mjs DIR [PORT]");
    process.exit(2);
  }
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`error: PORT: '${portText}' is not an integer in [0, 65535]`);
    process.exit(2);
  }
  const server = await startServer(directory, port);
  const url = `http://127.0.0.1:${server.address().port}/`;
  console.log(`stagemem is being served at ${url}  (Ctrl-C stops it)`);
}
