/*
 * Herald's service-worker kit (served by the gateway at /sdk/herald-sw.js). In your service worker:
 *
 *   importScripts('https://gateway.example/sdk/herald-sw.js');
 *   HeraldSW.init({ gateway: 'https://gateway.example' });
 *
 * It shows each push (WebKit's declarative JSON, which Herald sends, or any JSON object a caller
 * gave whole) and reports what the user did with it (received, clicked, dismissed) to
 * POST {gateway}/v1/receipts, keeping reports that could not be sent in IndexedDB (database
 * "herald", store "outbox") to retry at the next push or Background Sync. Plain ES2017, no build.
 *
 * init({ gateway, handlePush: false }) installs no push or notification listeners: then call
 * HeraldSW.handlePush(event.data) and HeraldSW.report(receipt, event, action) from your own.
 * init({ onPush(payload) }): called with each message first; resolve to false when you showed
 * it yourself (its "received" is still reported).
 */
(function (scope) {
  'use strict';

  const DATABASE = 'herald', STORE = 'outbox', OUTBOX_LIMIT = 200, BATCH = 50, SYNC_TAG = 'herald-receipts';
  // Options of showNotification() passed on when a message has them (MDN:
  // ServiceWorkerRegistration.showNotification()).
  const OPTIONS = ['body', 'icon', 'badge', 'image', 'tag', 'actions', 'requireInteraction', 'silent', 'renotify', 'lang', 'dir', 'timestamp', 'vibrate'];

  const settings = { gateway: null, onPush: null };
  let installed = false, flushing = null;

  const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);
  const warn = (what, error) => { try { console.warn('HeraldSW: ' + what, error); } catch (_) { /* no console */ } };

  // The message as JSON if it is JSON, else its text. PushMessageData.json() throws on anything
  // else (Push API, PushMessageData); a team's own handler may pass a string or an object.
  function read(data) {
    if (data === null || data === undefined) return '';
    if (typeof data.text === 'function') {
      const text = data.text();
      try { return JSON.parse(text); } catch (_) { return text; }
    }
    if (typeof data !== 'string') return data;
    try { return JSON.parse(data); } catch (_) { return data; }
  }

  // What to show: { title, options (options.data: the message's data, herald, url), token, badge }.
  function describe(message) {
    if (!isObject(message)) {
      return { title: '', options: { body: typeof message === 'string' ? message : JSON.stringify(message) }, token: null };
    }
    const token = typeof message.herald === 'string' && message.herald ? message.herald : null;
    const declarative = message.web_push === 8030 && isObject(message.notification);
    const source = declarative ? message.notification : message;
    const options = {};
    for (const name of OPTIONS) if (source[name] !== undefined && source[name] !== null) options[name] = source[name];
    if (options.body !== undefined) options.body = String(options.body);
    const data = isObject(source.data) ? source.data : {};
    const url = declarative ? source.navigate : (source.url || source.navigate || data.url);
    options.data = Object.assign({}, data, { herald: token, url: typeof url === 'string' ? url : undefined });
    const badge = declarative ? (message.app_badge !== undefined ? message.app_badge : source.app_badge) : message.app_badge;
    return { title: source.title === undefined || source.title === null ? '' : String(source.title), options, token, badge };
  }

  // Shown whatever the options: Chrome shows its own "updated in the background" notice for a
  // push with userVisibleOnly that shows none (Push API, PushManager.subscribe), and a bad option
  // (an action without a title, say) makes showNotification reject with a TypeError.
  async function show(title, options) {
    try {
      await scope.registration.showNotification(title, options);
    } catch (error) {
      warn('showNotification refused the options, shown with title and body only', error);
      await scope.registration.showNotification(title, { body: options.body, data: options.data });
    }
  }

  async function handlePush(data) {
    const message = read(data);
    const shown = describe(message);
    let showIt = true;
    if (typeof settings.onPush === 'function') {
      try { showIt = (await settings.onPush(message)) !== false; } catch (error) { warn('onPush threw', error); }
    }
    // Reported received even when it could not be shown (notifications permission revoked):
    // it reached the browser; the error is thrown after.
    let failure = null;
    if (showIt) {
      try { await show(shown.title, shown.options); } catch (error) { failure = error; }
    }
    // Badging API: 0 clears the badge; not every browser has it in a worker (MDN: Navigator.setAppBadge()).
    if (typeof shown.badge === 'number' && scope.navigator && typeof scope.navigator.setAppBadge === 'function') {
      try { await scope.navigator.setAppBadge(shown.badge); } catch (error) { warn('setAppBadge', error); }
    }
    await Promise.all([report(shown.token, 'received'), flush()]);
    if (failure) throw failure;
  }

  // 'sent', 'queued' (kept to retry), 'refused' (the gateway said no: dropped) or 'skipped'.
  async function report(receipt, event, action) {
    if (!settings.gateway || typeof receipt !== 'string' || !receipt) return 'skipped';
    const entry = { receipt, event };
    if (action) entry.action = String(action);
    try {
      const outcome = await post(entry);
      if (outcome !== 'retry') return outcome;
      await keep(entry);
      await askForSync();
    } catch (error) {
      warn('a receipt could not be kept', error);
    }
    return 'queued';
  }

  // One POST. text/plain is a CORS-safelisted Content-Type, so no preflight (Fetch standard,
  // "CORS-safelisted request-header"); keepalive lets it finish after the worker is done.
  async function post(body) {
    let response;
    try {
      response = await fetch(settings.gateway + '/v1/receipts', {
        method: 'POST', keepalive: true, mode: 'cors', credentials: 'omit',
        headers: { 'Content-Type': 'text/plain;charset=UTF-8' }, body: JSON.stringify(body)
      });
    } catch (_) {
      return 'retry'; // offline, or the gateway unreachable
    }
    if (response.ok) return 'sent';
    return response.status === 429 || response.status >= 500 ? 'retry' : 'refused';
  }

  // Sends what the outbox holds, in batches; resolves to whether anything is still kept.
  function flush() {
    if (!settings.gateway || typeof indexedDB === 'undefined') return Promise.resolve(false);
    if (!flushing) {
      flushing = (async () => {
        let entries = await kept();
        while (entries.length) {
          const batch = entries.slice(0, BATCH);
          const outcome = await post({ events: batch.map((entry) => entry.value) });
          if (outcome === 'retry') return true;
          await remove(batch.map((entry) => entry.key)); // taken or refused: done with either way
          entries = entries.slice(BATCH);
        }
        return false;
      })().catch((error) => { warn('the outbox could not be sent', error); return true; })
        .then((left) => { flushing = null; return left; });
    }
    return flushing;
  }

  async function askForSync() {
    // Background Sync (WICG): Chrome and Edge only; elsewhere the next push retries.
    if (scope.registration && scope.registration.sync) {
      try { await scope.registration.sync.register(SYNC_TAG); } catch (_) { /* no permission: the next push retries */ }
    }
  }

  // IndexedDB, promisified: the outbox, keyed by an increasing number (oldest first).
  async function transact(mode, work) {
    const database = await new Promise((resolve, reject) => {
      const request = indexedDB.open(DATABASE, 1);
      request.onupgradeneeded = () => request.result.createObjectStore(STORE, { autoIncrement: true });
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    try {
      return await new Promise((resolve, reject) => {
        const transaction = database.transaction(STORE, mode);
        let result;
        transaction.oncomplete = () => resolve(result);
        transaction.onerror = transaction.onabort = () => reject(transaction.error);
        work(transaction.objectStore(STORE), (value) => { result = value; });
      });
    } finally {
      database.close();
    }
  }

  // Adds one; past OUTBOX_LIMIT the oldest are dropped.
  function keep(entry) {
    return transact('readwrite', (store) => {
      store.add(entry);
      const count = store.count();
      count.onsuccess = () => {
        let extra = count.result - OUTBOX_LIMIT;
        if (extra <= 0) return;
        store.openCursor().onsuccess = (event) => {
          const cursor = event.target.result;
          if (cursor && extra-- > 0) { cursor.delete(); cursor.continue(); }
        };
      };
    });
  }

  function kept() {
    const entries = [];
    return transact('readonly', (store, done) => {
      store.openCursor().onsuccess = (event) => {
        const cursor = event.target.result;
        if (cursor) { entries.push({ key: cursor.key, value: cursor.value }); cursor.continue(); } else done(entries);
      };
    });
  }

  function remove(keys) {
    return transact('readwrite', (store) => { for (const key of keys) store.delete(key); });
  }

  // Focuses a window already at the URL, else opens one. clients.openWindow rejects without the
  // click's user activation (Service Workers spec, Clients.openWindow(); MDN: "allowed to show a
  // popup"), so it is called at once, not after the report, and a refusal is ignored.
  async function openOrFocus(url) {
    try {
      const target = new URL(url, scope.registration.scope);
      if (target.protocol !== 'https:' && target.protocol !== 'http:') return;
      const windows = await scope.clients.matchAll({ type: 'window', includeUncontrolled: true });
      const open = windows.find((client) => client.url === target.href && 'focus' in client);
      if (open) await open.focus();
      else await scope.clients.openWindow(target.href);
    } catch (_) { /* a bad URL, no user activation, or the window gone */ }
  }

  function onPush(event) {
    event.waitUntil(handlePush(event.data).catch((error) => warn('push', error)));
  }

  function onClick(event) {
    event.notification.close();
    const data = isObject(event.notification.data) ? event.notification.data : {};
    const reported = report(data.herald, 'clicked', event.action || undefined);
    const opened = data.url ? openOrFocus(data.url) : Promise.resolve();
    event.waitUntil(Promise.all([reported, opened]));
  }

  function onClose(event) {
    event.waitUntil(report((event.notification.data || {}).herald, 'dismissed'));
  }

  function onSync(event) {
    if (event.tag !== SYNC_TAG) return;
    // A rejected promise asks the browser to retry later (WICG Background Sync).
    event.waitUntil(flush().then((left) => { if (left) throw new Error('receipts still kept'); }));
  }

  // Call it at the top level of the worker script: listeners added later are ignored (Service
  // Workers spec: event listeners must be added during the script's first evaluation).
  function init(options) {
    const given = options || {};
    if (typeof given.gateway !== 'string' || !/^https?:\/\//.test(given.gateway)) {
      throw new TypeError('HeraldSW.init: gateway must be the gateway\'s http(s) base URL');
    }
    settings.gateway = given.gateway.replace(/\/+$/, '');
    settings.onPush = typeof given.onPush === 'function' ? given.onPush : null;
    if (installed) return;
    installed = true;
    scope.addEventListener('sync', onSync);
    if (given.handlePush === false) return;
    scope.addEventListener('push', onPush);
    scope.addEventListener('notificationclick', onClick);
    scope.addEventListener('notificationclose', onClose);
  }

  scope.HeraldSW = Object.freeze({ init, handlePush, report, flush });
})(self);
