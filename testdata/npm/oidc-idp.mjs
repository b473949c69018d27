#!/usr/bin/env node
// A real OAuth 2.1 authorization server for bouncer listen's tests: the
// oidc-provider package (a certified OpenID Provider), pinned in
// package.json, on loopback. It issues JWT access tokens by the client
// credentials grant, for the resource the client names (RFC 8707 resource
// indicators), and publishes its metadata and keys as any issuer does.
//
// Usage: node oidc-idp.mjs RESOURCE [RESOURCE...]
// Each RESOURCE is a URL it will issue tokens for, with the scope "mcp".
// It prints "issuer URL" once it listens, and serves until killed. The
// clients are alice-agent and bob-agent, with the secret "s3cret".
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const resources = process.argv.slice(2);
if (resources.length === 0) {
  console.error('usage: node oidc-idp.mjs RESOURCE [RESOURCE...]');
  process.exit(2);
}
const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'idp-1', alg: 'ES256', use: 'sig' };
const client = (id) => ({
  client_id: id,
  client_secret: 's3cret',
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  scope: 'mcp',
  id_token_signed_response_alg: 'ES256',
});

const { createServer } = await import('node:http');
const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;
const provider = new Provider(issuer, {
  clients: [client('alice-agent'), client('bob-agent')],
  jwks: { keys: [jwk] },
  cookies: { keys: ['bouncer-test-only'] },
  scopes: ['mcp'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => {
        if (!resources.includes(resource)) {
          throw new Error(`no such resource: ${resource}`);
        }
        return { scope: 'mcp', audience: resource, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } } };
      },
    },
  },
});
server.on('request', provider.callback());
console.log(`issuer ${issuer}`);
