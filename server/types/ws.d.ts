// The parts of `ws` (8.x) Gradebox uses; the package ships no types of its own, and @types/ws is
// not a dependency.

declare module "ws" {
  import type { EventEmitter } from "node:events";
  import type { IncomingMessage } from "node:http";
  import type { Duplex } from "node:stream";

  export interface ClientOptions {
    headers?: Record<string, string>;
    maxPayload?: number;
    handshakeTimeout?: number;
    perMessageDeflate?: boolean;
    followRedirects?: boolean;
    /** passed on to net.connect / tls.connect */
    lookup?: (hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => void;
  }

  export class WebSocket extends EventEmitter {
    static readonly CONNECTING: 0;
    static readonly OPEN: 1;
    static readonly CLOSING: 2;
    static readonly CLOSED: 3;
    constructor(address: string | URL, options?: ClientOptions);
    readonly readyState: 0 | 1 | 2 | 3;
    readonly bufferedAmount: number;
    send(data: string | Buffer, callback?: (error?: Error) => void): void;
    send(data: string | Buffer, options: { binary?: boolean }, callback?: (error?: Error) => void): void;
    close(code?: number, reason?: string): void;
    terminate(): void;
    pause(): void;
    resume(): void;
    on(event: "message", listener: (data: Buffer, isBinary: boolean) => void): this;
    on(event: "close", listener: (code: number, reason: Buffer) => void): this;
    on(event: "error", listener: (error: Error) => void): this;
    on(event: "open", listener: () => void): this;
    on(event: "unexpected-response", listener: (request: unknown, response: IncomingMessage) => void): this;
    once(event: "open", listener: () => void): this;
    once(event: "error", listener: (error: Error) => void): this;
    once(event: "close", listener: (code: number, reason: Buffer) => void): this;
  }

  export interface ServerOptions {
    noServer?: boolean;
    maxPayload?: number;
    perMessageDeflate?: boolean;
  }

  export class WebSocketServer extends EventEmitter {
    constructor(options: ServerOptions);
    handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer, callback: (ws: WebSocket) => void): void;
    close(callback?: () => void): void;
  }

  export default WebSocket;
}
