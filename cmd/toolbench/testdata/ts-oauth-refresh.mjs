// The TypeScript SDK's OAuth example server (simpleStreamableHttp.js
// --oauth --oauth-strict), unchanged but for one thing: its demo provider
// answers the refresh_token grant ("Not implemented for example demo" in
// 1.32.2), with rotation and the same strict resource check as the code
// grant, so that toolbench's refresh can be tested against the SDK's own
// token endpoint. TS_SDK is the SDK's folder.
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';

const sdk = (p) => pathToFileURL(`${process.env.TS_SDK}/dist/esm/${p}`).href;
const { DemoInMemoryAuthProvider } = await import(sdk('examples/server/demoInMemoryOAuthProvider.js'));
const { InvalidGrantError, InvalidTargetError } = await import(sdk('server/auth/errors.js'));

const refreshTokens = new Map();
const exchangeCode = DemoInMemoryAuthProvider.prototype.exchangeAuthorizationCode;

DemoInMemoryAuthProvider.prototype.exchangeAuthorizationCode = async function (client, code, verifier, redirectUri, resource) {
    const issued = await exchangeCode.call(this, client, code, verifier, redirectUri, resource);
    const data = this.tokens.get(issued.access_token);
    const refresh = randomUUID();
    refreshTokens.set(refresh, { clientId: client.client_id, scopes: data.scopes, resource: data.resource });
    return { ...issued, refresh_token: refresh };
};

DemoInMemoryAuthProvider.prototype.exchangeRefreshToken = async function (client, refreshToken, _scopes, resource) {
    const grant = refreshTokens.get(refreshToken);
    if (!grant || grant.clientId !== client.client_id) {
        throw new InvalidGrantError('unknown or revoked refresh token');
    }
    if (this.validateResource && !this.validateResource(resource)) {
        throw new InvalidTargetError(`Invalid resource: ${resource}`);
    }
    refreshTokens.delete(refreshToken);
    const access = randomUUID();
    this.tokens.set(access, { token: access, clientId: client.client_id, scopes: grant.scopes,
        expiresAt: Date.now() + 3600000, resource: grant.resource, type: 'access' });
    const refresh = randomUUID();
    refreshTokens.set(refresh, grant);
    return { access_token: access, token_type: 'bearer', expires_in: 3600, scope: grant.scopes.join(' '), refresh_token: refresh };
};

await import(sdk('examples/server/simpleStreamableHttp.js'));
