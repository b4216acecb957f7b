// A static file server for the built web app, bound to 127.0.0.1 only.
//   node scripts/static-server.mjs DIR [PORT]   (PORT 0 or absent: any free port)
// Used by scripts/serve.sh and by the browser tests (import { startServer }).
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
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
      const body = await readFile(file);
      response.writeHead(200, {
        "Content-Type": contentTypes[extname(file)] ?? "application/octet-stream",
        "Cache-Control": "no-cache",
      });
      response.end(body);
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
