// Swagger UI over the app's own OpenAPI schema (no inline script: the page's CSP allows only this origin's files).
"use strict";
window.addEventListener("load", () => {
  if (!window.SwaggerUIBundle) return;
  window.SwaggerUIBundle({url: "/docs/openapi-viewer.json", dom_id: "#swagger-ui", deepLinking: true,
                          presets: [window.SwaggerUIBundle.presets.apis], layout: "BaseLayout"});
});
