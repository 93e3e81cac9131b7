{{- define "oncegate.labels" -}}
app.kubernetes.io/name: oncegate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* The pod spec every Oncegate container shares: read-only root, non-root, probes, secrets, config, data. */}}
{{- define "oncegate.pod" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 1000
  runAsGroup: 1000
  fsGroup: 1000
containers:
  - name: {{ .service }}
    image: "{{ .root.Values.image.registry }}/{{ .image }}:{{ .root.Values.image.tag }}"
    imagePullPolicy: {{ .root.Values.image.pullPolicy }}
    args: {{ toJson .args }}
    securityContext:
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      capabilities: { drop: ["ALL"] }
    env:
      - name: ONCEGATE_MASTER_KEY_FILE
        value: /etc/oncegate/secrets/master.key
      {{- if eq .root.Values.mode "split" }}
      - name: ONCEGATE_STORE_URL
        valueFrom:
          secretKeyRef: { name: {{ .root.Values.secrets.storeUrl.name }}, key: {{ .root.Values.secrets.storeUrl.key }} }
      {{- end }}
      {{- if .root.Values.tracing.endpoint }}
      - name: ONCEGATE_OTLP_ENDPOINT
        value: {{ .root.Values.tracing.endpoint | quote }}
      {{- end }}
      {{- if .root.Values.kafka.brokers }}
      - name: ONCEGATE_KAFKA_BROKERS
        value: {{ .root.Values.kafka.brokers | quote }}
      {{- end }}
    ports:
      {{- if or (eq .service "gateway") (eq .service "oncegate") }}
      - { name: mcp, containerPort: {{ .root.Values.ports.mcp }} }
      {{- end }}
      - { name: operations, containerPort: {{ .root.Values.ports.operations }} }
    livenessProbe:
      httpGet: { path: /healthz, port: operations }
      periodSeconds: 10
    readinessProbe:
      httpGet: { path: /readyz, port: operations }
      periodSeconds: 5
    resources: {{- toYaml .root.Values.resources | nindent 6 }}
    volumeMounts:
      - { name: config, mountPath: /etc/oncegate/oncegate.yaml, subPath: oncegate.yaml, readOnly: true }
      - { name: config, mountPath: /etc/oncegate/tools.yaml, subPath: tools.yaml, readOnly: true }
      - { name: master-key, mountPath: /etc/oncegate/secrets, readOnly: true }
      - { name: data, mountPath: /data }
      - { name: tmp, mountPath: /tmp }
volumes:
  - name: config
    configMap: { name: {{ .root.Release.Name }}-config }
  - name: master-key
    secret:
      secretName: {{ .root.Values.secrets.masterKey.name }}
      items: [{ key: {{ .root.Values.secrets.masterKey.key }}, path: master.key }]
  - name: data
    persistentVolumeClaim: { claimName: {{ .root.Release.Name }}-data }
  - name: tmp
    emptyDir: {}
{{- end -}}
