import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The console is built into static files (dist/index.html and dist/assets/) that the server serves at /console with a
 * strict CSP (`script-src 'self'; style-src 'self'`): the page has no inline script or style, and nothing is loaded
 * from another origin. `npm run dev -w @gatehouse/console` serves it with live reload and passes the server's routes
 * (the session handshake, tRPC, the hosted pages) to a running Gatehouse, by default http://localhost:4000.
 */
const server = process.env.GATEHOUSE_URL ?? 'http://localhost:4000';
const passed = ['/trpc', '/console/session', '/console/sign-in', '/console/sign-out', '/console/callback', '/a/', '/v1/'];

export default defineConfig({
  base: '/console/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    emptyOutDir: true,
    // Every asset a file of its own: an inlined data: URL would need a wider CSP.
    assetsInlineLimit: 0,
    target: 'es2022',
    reportCompressedSize: false,
  },
  server: {
    // As the server's own page: the session routes answer only their own origin (a cookie set by the server's port is
    // sent to this one too, since cookies ignore ports).
    proxy: Object.fromEntries(
      passed.map((path) => [path, { target: server, changeOrigin: true, headers: { origin: new URL(server).origin } }]),
    ),
  },
});
