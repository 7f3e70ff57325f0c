/*
 * Herald's page snippet (served by the gateway at /sdk/herald-page.js). From a click handler:
 *
 *   const subscription = await HeraldPage.subscribe({
 *     vapidPublicKey: 'BP…',            // what `herald webpush keygen` printed
 *     serviceWorker: '/sw.js',          // it calls importScripts('…/sdk/herald-sw.js') and HeraldSW.init
 *     backend: '/push/subscriptions',   // your backend: it adds its API key and forwards the body to
 *     user: 'alice',                    //   POST {gateway}/v1/apps/{app}/webpush/subscriptions
 *     headers: { 'X-CSRF-Token': '…' }  // optional, sent to your backend
 *   });
 *   await HeraldPage.unsubscribe();
 *
 * The browser never holds an API key: your backend authenticates the user and forwards
 * subscription.toJSON() plus "user". Plain ES2017, no build.
 */
(function (scope) {
  'use strict';

  // The VAPID public key (base64url, RFC 8292 §3.2) as the bytes PushManager.subscribe() takes.
  function keyBytes(base64url) {
    const text = String(base64url).trim().replace(/-/g, '+').replace(/_/g, '/');
    const raw = atob(text + '='.repeat((4 - (text.length % 4)) % 4));
    const bytes = new Uint8Array(raw.length);
    for (let index = 0; index < raw.length; index += 1) bytes[index] = raw.charCodeAt(index);
    return bytes;
  }

  function sameBytes(buffer, bytes) {
    if (!buffer) return false;
    const other = new Uint8Array(buffer);
    return other.length === bytes.length && other.every((byte, index) => byte === bytes[index]);
  }

  // Resolves once the registration has an active worker: subscribe() rejects without one (Push
  // API, PushManager.subscribe(): InvalidStateError). navigator.serviceWorker.ready is not used:
  // it never resolves when the page is outside the worker's scope.
  function activated(registration) {
    if (registration.active) return Promise.resolve(registration);
    const worker = registration.installing || registration.waiting;
    if (!worker) return Promise.reject(new Error('HeraldPage: the service worker has no worker installing'));
    return new Promise((resolve, reject) => {
      worker.addEventListener('statechange', function changed() {
        if (worker.state === 'activated') {
          worker.removeEventListener('statechange', changed);
          resolve(registration);
        } else if (worker.state === 'redundant') {
          worker.removeEventListener('statechange', changed);
          reject(new Error('HeraldPage: the service worker failed to install (see its console)'));
        }
      });
    });
  }

  function supported() {
    return 'serviceWorker' in navigator && 'PushManager' in scope && 'Notification' in scope;
  }

  // Safari asks for the permission only inside a user gesture (WebKit, "Meet Web Push"): call
  // subscribe() from a click handler.
  async function subscribe(options) {
    const given = options || {};
    if (!supported()) throw new Error('HeraldPage: this browser has no Web Push (Safari on iOS: add the site to the Home Screen first)');
    if (!given.vapidPublicKey) throw new TypeError('HeraldPage.subscribe: vapidPublicKey is required');
    const key = keyBytes(given.vapidPublicKey);
    const registered = await navigator.serviceWorker.register(given.serviceWorker || '/sw.js', given.scope ? { scope: given.scope } : undefined);
    const registration = await activated(registered);

    // A subscription is bound to the key it was made with (RFC 8292 §4): one made with another
    // key (the VAPID key rotated) is refused by the push service, so it is replaced.
    let subscription = await registration.pushManager.getSubscription();
    if (subscription) {
      const made = subscription.options ? subscription.options.applicationServerKey : undefined;
      if (made !== undefined && !sameBytes(made, key)) {
        await subscription.unsubscribe();
        subscription = null;
      }
    }
    if (!subscription) {
      subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    }

    const body = Object.assign({}, subscription.toJSON(), given.user === undefined ? {} : { user: given.user });
    const response = await fetch(given.backend || '/push/subscriptions', {
      method: 'POST', credentials: 'same-origin',
      headers: Object.assign({ 'Content-Type': 'application/json' }, given.headers || {}),
      body: JSON.stringify(body)
    });
    if (!response.ok) throw new Error('HeraldPage: the backend answered ' + response.status + ' to the subscription');
    return subscription;
  }

  // Ends this browser's subscription; resolves to whether there was one. The gateway retires the
  // device at its next send (the push service answers 404 or 410).
  async function unsubscribe(options) {
    const given = options || {};
    if (!supported()) return false;
    const registration = await navigator.serviceWorker.getRegistration(given.scope);
    const subscription = registration ? await registration.pushManager.getSubscription() : null;
    return subscription ? subscription.unsubscribe() : false;
  }

  scope.HeraldPage = Object.freeze({ subscribe, unsubscribe });
})(self);
